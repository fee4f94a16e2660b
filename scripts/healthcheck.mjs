// The image's HEALTHCHECK: the process's own /healthz (the gateway on PORT, every other service
// on METRICS_PORT), with plain node (the slim image has no curl).
const port = process.env.SERVICE === "gateway" || !process.env.SERVICE ? (process.env.PORT ?? "8080") : (process.env.METRICS_PORT ?? "9464");
const timeout = AbortSignal.timeout(3000);
fetch(`http://127.0.0.1:${port}/healthz`, { signal: timeout }).then(
  (res) => process.exit(res.ok ? 0 : 1),
  () => process.exit(1),
);
