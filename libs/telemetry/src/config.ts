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

/** Variables every service reads. */
export const baseConfigSchema = z.object({
  NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  /** NATS credentials, when the server asks for them: user and password, or a token. */
  NATS_USER: z.string().optional(),
  NATS_PASSWORD: z.string().optional(),
  NATS_TOKEN: z.string().optional(),
  BUS_NAMESPACE: z.string().regex(/^[a-z][a-z0-9_-]{0,30}$/, "must be lowercase letters, digits, _ or -").default("im"),
  DATABASE_URL: z.preprocess(
    (value) => (value === "" ? undefined : value),
    z.string().regex(/^postgres(ql)?:\/\//, "must start with postgres:// or postgresql://").optional(),
  ),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  DATA_DIR: z.string().default(".data"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** A back-end service's Prometheus listener (/metrics); 0 is off. The gateway serves /metrics on its own port. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(0),
});
export type BaseConfig = z.infer<typeof baseConfigSchema>;

/** The NATS credentials of a configuration, as connectBus takes them. */
export const natsAuthOf = (config: Pick<BaseConfig, "NATS_USER" | "NATS_PASSWORD" | "NATS_TOKEN">) => ({
  user: config.NATS_USER,
  pass: config.NATS_PASSWORD,
  token: config.NATS_TOKEN,
});
