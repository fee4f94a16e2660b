import { z } from "zod";
import { StartupError } from "./startup";

/**
 * Parses the environment once with a zod schema and fails fast with a sentence naming each
 * variable that is missing or wrong.
 */
export function parseConfig<S extends z.ZodType>(service: string, schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "environment"}: ${issue.message}`);
  const variable = String(result.error.issues[0]?.path[0] ?? "environment");
  throw new StartupError(variable, `its configuration is invalid: ${problems.join("; ")}`);
}

/**
 * How a variable is documented: its meaning (the README's configuration table is generated from
 * these, scripts/reference-docs.ts) and, for one without a default, what leaving it unset means.
 */
export const documented = <S extends z.ZodType>(schema: S, meaning: string, unset?: string): S => schema.meta({ description: meaning, ...(unset ? { unset } : {}) });

/** Variables every service reads. */
export const baseConfigSchema = z.object({
  NATS_URL: documented(z.string().default("nats://127.0.0.1:4222"), "NATS with JetStream; comma-separated for a cluster"),
  /** NATS credentials, when the server asks for them: user and password, or a token. */
  NATS_USER: documented(z.string().optional(), "NATS user, with NATS_PASSWORD, when the server asks for credentials (never logged)"),
  NATS_PASSWORD: documented(z.string().optional(), "NATS password (never logged)"),
  NATS_TOKEN: documented(z.string().optional(), "NATS token, instead of a user and password (never logged)"),
  BUS_NAMESPACE: documented(
    z.string().regex(/^[a-z][a-z0-9_-]{0,30}$/, "must be lowercase letters, digits, _ or -").default("im"),
    "subject root and stream prefix; lets clusters share one NATS",
  ),
  DATABASE_URL: documented(
    z.preprocess((value) => (value === "" ? undefined : value), z.string().regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://").optional()),
    "`postgres://…`; required when services run as separate processes",
    "embedded PGlite under `DATA_DIR`",
  ),
  DATABASE_POOL_SIZE: documented(z.coerce.number().int().min(1).max(200).default(10), "connections per service process"),
  DATABASE_STATEMENT_NAMES: documented(
    z.enum(["on", "off"]).default("on"),
    "`on`: the statements a process repeats become named prepared statements, planned once per connection (`off` for a pooler that cannot keep them); docs/operations.md",
  ),
  DATA_DIR: documented(z.string().default(".data"), "embedded database, generated keys, a started nats-server"),
  LOG_LEVEL: documented(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), "pino level; successful requests log at `debug`"),
  /** A back-end service's Prometheus listener (/metrics); 0 is off. The gateway serves /metrics on its own port. */
  METRICS_PORT: documented(
    z.coerce.number().int().min(0).max(65535).default(0),
    "port of a back-end service's Prometheus `/metrics` (0: off; the gateway serves `/metrics` on its own port); docs/operations.md",
  ),
});
export type BaseConfig = z.infer<typeof baseConfigSchema>;

/** The NATS credentials of a configuration, as connectBus takes them. */
export const natsAuthOf = (config: Pick<BaseConfig, "NATS_USER" | "NATS_PASSWORD" | "NATS_TOKEN">) => ({
  user: config.NATS_USER,
  pass: config.NATS_PASSWORD,
  token: config.NATS_TOKEN,
});
