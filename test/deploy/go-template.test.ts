import { describe, expect, it } from "vitest";
import { Renderer, TemplateError } from "./go-template";

const render = (source: string, dot: unknown = {}, helpers = "") => {
  const renderer = new Renderer();
  if (helpers) renderer.add("_helpers.tpl", helpers);
  renderer.add("t", source);
  return renderer.render("t", dot);
};

/** The Go text/template semantics the chart relies on, as Go defines them. */
describe("the Go template renderer of the chart tests", () => {
  it("trims whitespace at {{- and -}} only", () => {
    expect(render("a  {{- .x -}}  b", { x: 1 })).toBe("a1b");
    expect(render("a  {{ .x }}  b", { x: 1 })).toBe("a  1  b");
    expect(render("a\n{{- /* a comment */}}\nb")).toBe("a\nb");
  });

  it("passes a pipeline's value as the last argument", () => {
    expect(render('{{ .name | trunc 3 | quote }}', { name: "intentmesh" })).toBe('"int"');
    expect(render('{{ printf "%s-%s" .a .b | upper }}', { a: "x", b: "y" })).toBe("X-Y");
  });

  it("ranges over maps in key order and over lists, with $key and $value and $ as the root", () => {
    expect(render("{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}", { m: { b: 2, a: 1 } })).toBe("a=1;b=2;");
    expect(render("{{ range .l }}[{{ . }}|{{ $.root }}]{{ end }}", { l: [1, 2], root: "r" })).toBe("[1|r][2|r]");
    expect(render("{{ range .l }}x{{ else }}empty{{ end }}", { l: [] })).toBe("empty");
  });

  it("follows Go truthiness in if, else if, with, and, or, not", () => {
    const t = '{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}';
    expect([render(t, { a: 1 }), render(t, { a: 0, b: "x" }), render(t, { a: "", b: [] })]).toEqual(["A", "B", "C"]);
    expect(render("{{ with .m }}{{ .k }}{{ else }}none{{ end }}", { m: {} })).toBe("none");
    expect(render("{{ and .a .b }}|{{ or .a .b }}|{{ not .a }}", { a: 0, b: "y" })).toBe("0|y|true");
  });

  it("scopes variables, lets = assign an outer one, and evaluates parentheses", () => {
    expect(render('{{ $x := "a" }}{{ if true }}{{ $x = "b" }}{{ $y := "c" }}{{ end }}{{ $x }}')).toBe("b");
    expect(() => render('{{ if true }}{{ $y := "c" }}{{ end }}{{ $y }}')).toThrow(TemplateError);
    expect(render('{{ (dict "a" (dict "b" 7)).a.b }}')).toBe("7");
  });

  it("includes defined templates and renders maps with toYaml / toJson in key order", () => {
    const helpers = '{{- define "greet" -}}hi {{ .name }}{{- end }}';
    expect(render('{{ include "greet" . | upper }}', { name: "x" }, helpers)).toBe("HI X");
    expect(render("{{ toYaml .m | nindent 2 }}", { m: { b: 1, a: { c: [1] } } })).toBe("\n  a:\n    c:\n      - 1\n  b: 1");
    expect(render("{{ toJson .m }}", { m: { b: 1, a: 2 } })).toBe('{"a":2,"b":1}');
  });

  it("implements dig, default, required and fail as Sprig and Helm do", () => {
    expect(render('{{ dig "a" "b" "none" .m }}|{{ dig "a" "x" "none" .m }}', { m: { a: { b: "found" } } })).toBe("found|none");
    expect(render('{{ default "d" .v }}|{{ default "d" .w }}', { v: "", w: "w" })).toBe("d|w");
    expect(() => render('{{ required "x is required" .x }}', {})).toThrow("x is required");
    expect(() => render('{{ fail "no" }}')).toThrow("no");
  });

  it("prints nil as nothing but refuses a field of nil, and anything outside its subset", () => {
    expect(render("[{{ .missing }}]", {})).toBe("[]");
    expect(() => render("{{ .missing.field }}", {})).toThrow(/nil pointer evaluating/);
    expect(() => render("{{ lookup \"v1\" \"Secret\" \"ns\" \"x\" }}")).toThrow(/not in this renderer's subset/);
    expect(() => render("{{ if .a }}unclosed")).toThrow(/missing \{\{end\}\}/);
  });
});
