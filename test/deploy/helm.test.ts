import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Ajv } from "ajv";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { CLUSTER_SERVICES } from "@intentmesh/contracts";
import { CHART_DIR, chartValues, mergeValues, renderChart } from "./helm-chart";
import { TemplateError } from "./go-template";

/**
 * helm/intentmesh without a helm binary: values.yaml against values.schema.json, and the
 * templates rendered (test/deploy/go-template.ts) and validated against the Kubernetes API
 * schemas shipped by kubernetes-models, object by object.
 */
type Json = Record<string, any>;

const schema = JSON.parse(fs.readFileSync(path.join(CHART_DIR, "values.schema.json"), "utf8"));
const validateValues = new Ajv({ allErrors: true, strict: false }).compile(schema);

const REQUIRED: Json = {
  nats: { url: "nats://nats.nats.svc:4222" },
  database: { url: "postgres://intentmesh:pw@pg.db.svc:5432/intentmesh" },
  apiKeys: { keys: [{ key_sha256: "a".repeat(64), principal: "ci-bot", roles: ["agent"] }] },
  vault: { kek: { existingSecret: "intentmesh-vault-kek" } },
};
const ALL_WORKLOADS = ["gateway", ...CLUSTER_SERVICES];

const KUBERNETES_MODELS: Record<string, new (data: any) => { validate(): void }> = {
  Deployment,
  Service,
  Secret,
  PodDisruptionBudget,
  HorizontalPodAutoscaler,
  NetworkPolicy,
  Ingress,
  ServiceMonitor,
};

function render(overrides: Json = {}) {
  const values = mergeValues(mergeValues(chartValues(), REQUIRED), overrides);
  // What `helm install` does first: the values must pass the chart's schema.
  expect(validateValues(values), JSON.stringify(validateValues.errors)).toBe(true);
  const { manifests, notes } = renderChart(mergeValues(REQUIRED, overrides));
  for (const manifest of manifests as Json[]) {
    const Model = KUBERNETES_MODELS[manifest.kind as string];
    expect(Model, `no Kubernetes schema for kind ${manifest.kind}`).toBeDefined();
    expect(() => new Model!(manifest).validate(), `${manifest.kind}/${manifest.metadata?.name}`).not.toThrow();
  }
  return { manifests: manifests as Json[], notes };
}

const ofKind = (manifests: Json[], kind: string) => manifests.filter((m) => m.kind === kind);
const deploymentOf = (manifests: Json[], service: string) => manifests.find((m) => m.kind === "Deployment" && m.metadata.name === `im-intentmesh-${service}`)!;
const containerOf = (manifests: Json[], service: string) => deploymentOf(manifests, service).spec.template.spec.containers[0];
const envOf = (manifests: Json[], service: string) => Object.fromEntries((containerOf(manifests, service).env as Json[]).map((e) => [e.name, e]));

describe("values.schema.json", () => {
  it("accepts the chart's own values.yaml with the required settings filled in", () => {
    expect(validateValues(mergeValues(chartValues(), REQUIRED)), JSON.stringify(validateValues.errors)).toBe(true);
  });

  it.each([
    ["a writable root filesystem", { securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: false } }],
    ["privilege escalation", { securityContext: { allowPrivilegeEscalation: true, readOnlyRootFilesystem: true } }],
    ["running as root", { podSecurityContext: { runAsNonRoot: false } }],
    ["an unknown top-level value", { replicaCount: 3 }],
    ["a service the cluster does not have", { services: { billing: { replicas: 1 } } }],
    ["an unknown field of a service", { services: { intents: { replica: 3 } } }],
    ["a NATS URL that is not nats:// or tls://", { nats: { url: "http://nats:4222" } }],
    ["a database URL that is not postgres://", { database: { url: "mysql://db/x" } }],
    ["an API key role that does not exist", { apiKeys: { keys: [{ key: "k".repeat(20), principal: "p", roles: ["root"] }] } }],
    ["an API key shorter than 16 characters", { apiKeys: { keys: [{ key: "short", principal: "p", roles: ["agent"] }] } }],
    ["an environment variable name in lower case", { services: { gateway: { env: { body_limit: "1mb" } } } }],
    ["a trust policy the federation does not know", { federation: { trustPolicy: "everyone" } }],
    ["a federation URL that is not https", { federation: { serverUrl: "http://example.org" } }],
    ["a privileged metrics port", { metricsPort: 80 }],
  ])("refuses %s", (_what, overrides) => {
    expect(validateValues(mergeValues(mergeValues(chartValues(), REQUIRED), overrides as Json))).toBe(false);
  });
});

describe("the rendered chart", () => {
  it("renders one Deployment, Service, PodDisruptionBudget and NetworkPolicy per workload, all valid Kubernetes objects", () => {
    const { manifests } = render();
    for (const kind of ["Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"]) {
      expect(ofKind(manifests, kind).map((m) => m.metadata.name).sort(), kind).toEqual(ALL_WORKLOADS.map((s) => `im-intentmesh-${s}`).sort());
    }
    // Off by default.
    for (const kind of ["HorizontalPodAutoscaler", "ServiceMonitor", "Ingress"]) expect(ofKind(manifests, kind), kind).toEqual([]);
  });

  it("gives every workload startup, liveness and readiness probes on its own /healthz and /readyz", () => {
    const { manifests } = render();
    for (const service of ALL_WORKLOADS) {
      const container = containerOf(manifests, service);
      const port = service === "gateway" ? "http" : "ops";
      expect(container.ports.map((p: Json) => p.name), service).toEqual([port]);
      expect(container.startupProbe.httpGet, service).toEqual({ path: "/healthz", port });
      expect(container.livenessProbe.httpGet, service).toEqual({ path: "/healthz", port });
      expect(container.readinessProbe.httpGet, service).toEqual({ path: "/readyz", port });
      if (service !== "gateway") expect(envOf(manifests, service).METRICS_PORT.value).toBe("9464");
    }
  });

  it("runs every container as non-root on a read-only root filesystem with RuntimeDefault seccomp, no escalation, no capabilities, and resources", () => {
    const { manifests } = render();
    for (const service of ALL_WORKLOADS) {
      const pod = deploymentOf(manifests, service).spec.template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: "RuntimeDefault" } });
      expect(pod.automountServiceAccountToken).toBe(false);
      const container = containerOf(manifests, service);
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      expect(container.resources.limits).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      expect(container.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
    }
  });

  it("gives each backing service its own DATABASE_URL and the gateway none", () => {
    const { manifests } = render({ services: { memory: { database: { url: "postgres://memory:pw@pg:5432/im" } }, channels: { database: { existingSecret: "channels-db", existingSecretKey: "url" } } } });
    expect(envOf(manifests, "gateway").DATABASE_URL).toBeUndefined();
    expect(envOf(manifests, "memory").DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: "im-intentmesh-memory-database", key: "DATABASE_URL" });
    expect(envOf(manifests, "channels").DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: "channels-db", key: "url" });
    expect(envOf(manifests, "intents").DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: "im-intentmesh-database", key: "DATABASE_URL" });
    const memorySecret = manifests.find((m) => m.kind === "Secret" && m.metadata.name === "im-intentmesh-memory-database")!;
    expect(memorySecret.stringData).toEqual({ DATABASE_URL: "postgres://memory:pw@pg:5432/im" });
    // The API keys reach the gateway alone, as a mounted file.
    const gatewayPod = deploymentOf(manifests, "gateway").spec.template.spec;
    expect(gatewayPod.volumes.find((v: Json) => v.name === "api-keys").secret.secretName).toBe("im-intentmesh-api-keys");
    expect(deploymentOf(manifests, "intents").spec.template.spec.volumes.some((v: Json) => v.name === "api-keys")).toBe(false);
  });

  it("passes NATS credentials from a Secret to every workload", () => {
    const { manifests } = render({ nats: { auth: { user: "intentmesh", password: "nats-pw" } } });
    const secret = manifests.find((m) => m.kind === "Secret" && m.metadata.name === "im-intentmesh-nats")!;
    expect(secret.stringData).toEqual({ NATS_USER: "intentmesh", NATS_PASSWORD: "nats-pw" });
    for (const service of ALL_WORKLOADS) {
      const env = envOf(manifests, service);
      for (const key of ["NATS_USER", "NATS_PASSWORD", "NATS_TOKEN"]) expect(env[key].valueFrom.secretKeyRef, `${service} ${key}`).toEqual({ name: "im-intentmesh-nats", key, optional: true });
    }
    // Without credentials nothing refers to a Secret that does not exist.
    expect(envOf(render().manifests, "intents").NATS_USER).toBeUndefined();
  });

  it("scales with a HorizontalPodAutoscaler when asked, leaving replicas to it", () => {
    const { manifests } = render({ autoscaling: { enabled: true }, services: { gateway: { autoscaling: { maxReplicas: 12 } } } });
    expect(ofKind(manifests, "HorizontalPodAutoscaler")).toHaveLength(ALL_WORKLOADS.length);
    const gatewayHpa = manifests.find((m) => m.kind === "HorizontalPodAutoscaler" && m.metadata.name === "im-intentmesh-gateway")!;
    expect(gatewayHpa.spec).toMatchObject({ minReplicas: 2, maxReplicas: 12, scaleTargetRef: { kind: "Deployment", name: "im-intentmesh-gateway" } });
    for (const service of ALL_WORKLOADS) expect(deploymentOf(manifests, service).spec.replicas, service).toBeUndefined();
    // One service alone.
    const single = render({ services: { intents: { autoscaling: { enabled: true } } } }).manifests;
    expect(ofKind(single, "HorizontalPodAutoscaler").map((m) => m.metadata.name)).toEqual(["im-intentmesh-intents"]);
    expect(deploymentOf(single, "gateway").spec.replicas).toBe(2);
  });

  it("limits traffic: the gateway takes API calls, backing services only scrapes; egress to DNS, NATS, PostgreSQL and, for federation, https", () => {
    const { manifests } = render({ federation: { enabled: true, serverUrl: "https://im.example.org", signingKey: { existingSecret: "fed-key" } } });
    const policy = (service: string) => manifests.find((m) => m.kind === "NetworkPolicy" && m.metadata.name === `im-intentmesh-${service}`)!.spec;
    expect(policy("gateway").ingress).toEqual([{ ports: [{ port: "http", protocol: "TCP" }] }]);
    expect(policy("intents").ingress[0].ports).toEqual([{ port: "ops", protocol: "TCP" }]);
    expect(policy("intents").ingress[0].from).toEqual([{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }]);
    const egressPorts = (service: string) => policy(service).egress.flatMap((rule: Json) => rule.ports.map((p: Json) => p.port));
    expect(egressPorts("gateway")).toEqual([53, 53, 4222]);
    expect(egressPorts("intents")).toEqual([53, 53, 4222, 5432]);
    expect(egressPorts("federation")).toEqual([53, 53, 4222, 5432, 443]);
    expect(policy("federation").egress[3].to[0].ipBlock.except).toContain("10.0.0.0/8");
    expect(render({ networkPolicy: { enabled: false } }).manifests.some((m) => m.kind === "NetworkPolicy")).toBe(false);
  });

  it("adds a ServiceMonitor over every process's /metrics and an Ingress to the gateway when enabled", () => {
    const { manifests } = render({ serviceMonitor: { enabled: true, labels: { release: "kube-prometheus" } }, ingress: { enabled: true, className: "nginx", host: "im.example.org" } });
    const monitor = ofKind(manifests, "ServiceMonitor")[0]!;
    expect(monitor.metadata.labels.release).toBe("kube-prometheus");
    expect(monitor.spec.endpoints.map((e: Json) => `${e.port}${e.path}`)).toEqual(["http/metrics", "ops/metrics"]);
    const ingress = ofKind(manifests, "Ingress")[0]!;
    expect(ingress.spec.rules[0].host).toBe("im.example.org");
    expect(ingress.spec.rules[0].http.paths[0].backend.service).toEqual({ name: "im-intentmesh-gateway", port: { name: "http" } });
  });

  it("refuses to render without what it cannot guess, naming the value", () => {
    const fails = (overrides: Json, message: RegExp) => expect(() => renderChart(overrides)).toThrow(message);
    fails({ database: REQUIRED.database, apiKeys: REQUIRED.apiKeys }, /nats\.url is required/);
    fails({ nats: REQUIRED.nats, apiKeys: REQUIRED.apiKeys }, /needs PostgreSQL: set services\.\w+\.database\.url/);
    fails({ nats: REQUIRED.nats, database: REQUIRED.database }, /the gateway needs API keys/);
    fails(mergeValues(REQUIRED, { federation: { enabled: true } }), /federation\.serverUrl is required/);
    fails(mergeValues(REQUIRED, { ingress: { enabled: true } }), /ingress\.host is required/);
    expect(() => renderChart({})).toThrow(TemplateError);
  });

  it("says in NOTES how to reach the gateway", () => {
    expect(render().notes).toContain("kubectl -n intentmesh port-forward svc/im-intentmesh-gateway 8080:8080");
  });
});

describe("the vault's key-encryption keys", () => {
  it("come from the Secret named in vault.kek, never from values, and the chart refuses to render without one", () => {
    const { manifests } = render();
    expect(envOf(manifests, "vault").VAULT_KEK.valueFrom.secretKeyRef).toEqual({ name: "intentmesh-vault-kek", key: "kek" });
    for (const service of ALL_WORKLOADS.filter((s) => s !== "vault")) expect(envOf(manifests, service).VAULT_KEK, service).toBeUndefined();
    expect(() => renderChart(mergeValues(REQUIRED, { vault: { kek: { existingSecret: "" } } }))).toThrow(/vault\.kek\.existingSecret is required/);
  });
});
