import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { Renderer } from "./go-template";

export const CHART_DIR = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../helm/intentmesh");

type Json = Record<string, unknown>;
const isMap = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** Helm's merge of user values over the chart's: maps merge, anything else replaces, null removes. */
export function mergeValues(base: Json, overrides: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === null) delete out[key];
    else if (isMap(value) && isMap(out[key])) out[key] = mergeValues(out[key], value);
    else out[key] = value;
  }
  return out;
}

export const chartValues = (): Json => parseYaml(fs.readFileSync(path.join(CHART_DIR, "values.yaml"), "utf8")) as Json;

export interface RenderedChart {
  /** Every Kubernetes object of every template, in file order. */
  manifests: Json[];
  notes: string;
}

/** `helm template <release> helm/intentmesh --namespace <namespace> -f <overrides>`, in process. */
export function renderChart(overrides: Json = {}, release = { name: "im", namespace: "intentmesh" }): RenderedChart {
  const chart = parseYaml(fs.readFileSync(path.join(CHART_DIR, "Chart.yaml"), "utf8")) as Json;
  const values = mergeValues(chartValues(), overrides);
  const templatesDir = path.join(CHART_DIR, "templates");
  const basePath = "intentmesh/templates";
  const renderer = new Renderer();
  const files = fs.readdirSync(templatesDir).sort();
  for (const file of files) renderer.add(`${basePath}/${file}`, fs.readFileSync(path.join(templatesDir, file), "utf8"));
  const top = {
    Values: values,
    Release: { Name: release.name, Namespace: release.namespace, Service: "Helm", IsInstall: true, IsUpgrade: false },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion, Description: chart.description },
    Template: { BasePath: basePath, Name: "" },
  };
  const manifests: Json[] = [];
  let notes = "";
  for (const file of files) {
    if (file.startsWith("_")) continue;
    const text = renderer.render(`${basePath}/${file}`, { ...top, Template: { BasePath: basePath, Name: `${basePath}/${file}` } });
    if (file === "NOTES.txt") {
      notes = text;
      continue;
    }
    for (const document of parseAllDocuments(text)) {
      if (document.errors.length) throw new Error(`${file}: ${document.errors[0]!.message}\n${text}`);
      const object = document.toJSON() as Json | null;
      if (object) manifests.push(object);
    }
  }
  return { manifests, notes };
}
