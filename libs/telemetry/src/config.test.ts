import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { StartupError } from "./startup";
import { baseConfigSchema, parseConfig } from "./config";

function configError(env: NodeJS.ProcessEnv): Error {
  try {
    parseConfig("intents", baseConfigSchema, env);
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }
  throw new Error("parseConfig did not throw");
}

describe("parseConfig with the base schema", () => {
  it("applies the defaults", () => {
    const config = parseConfig("intents", baseConfigSchema, {});
    expect(config.NATS_URL).toBe("nats://127.0.0.1:4222");
    expect(config.BUS_NAMESPACE).toBe("im");
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.DATABASE_POOL_SIZE).toBe(10);
    expect(config.DATA_DIR).toBe(".data");
    expect(config.LOG_LEVEL).toBe("info");
  });

  it("reads an empty DATABASE_URL as undefined", () => {
    expect(parseConfig("intents", baseConfigSchema, { DATABASE_URL: "" }).DATABASE_URL).toBeUndefined();
  });

  it.each(["postgres://u@h:5432/db", "postgresql://h/db"])("accepts DATABASE_URL=%s", (url) => {
    expect(parseConfig("intents", baseConfigSchema, { DATABASE_URL: url }).DATABASE_URL).toBe(url);
  });

  it("reads the given values and coerces the pool size", () => {
    const config = parseConfig("intents", baseConfigSchema, { NATS_URL: "nats://n:1", BUS_NAMESPACE: "t_1", DATABASE_POOL_SIZE: "25" });
    expect(config.NATS_URL).toBe("nats://n:1");
    expect(config.BUS_NAMESPACE).toBe("t_1");
    expect(config.DATABASE_POOL_SIZE).toBe(25);
  });

  it("throws a StartupError naming DATABASE_URL for mysql://x (runMain prints it after the service's name)", () => {
    const error = configError({ DATABASE_URL: "mysql://x" });
    expect(error.message).toContain("DATABASE_URL");
    expect((error as StartupError).variable).toBe("DATABASE_URL");
    expect(error.message).not.toContain("BUS_NAMESPACE");
  });

  it.each([
    ["BUS_NAMESPACE", "Upper"],
    ["BUS_NAMESPACE", "1im"],
    ["DATABASE_POOL_SIZE", "0"],
    ["DATABASE_POOL_SIZE", "many"],
    ["LOG_LEVEL", "verbose"],
  ])("throws naming %s for %j", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.message).toContain(name);
  });

  it("names every bad variable at once", () => {
    const error = configError({ DATABASE_URL: "mysql://x", LOG_LEVEL: "loud" });
    expect(error.message).toContain("DATABASE_URL");
    expect(error.message).toContain("LOG_LEVEL");
  });

  it("works with an extended schema", () => {
    const schema = baseConfigSchema.extend({ PORT: z.coerce.number().int().default(8080) });
    expect(parseConfig("gateway", schema, { PORT: "9000" }).PORT).toBe(9000);
    expect(() => parseConfig("gateway", schema, { PORT: "x" })).toThrow(/PORT/);
  });
});
