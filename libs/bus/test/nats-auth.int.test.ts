import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isStartupError } from "@intentmesh/telemetry";
import { connectBus } from "../src/connection";
import { PrivateNats } from "../../../test/support/private-nats";

/** NATS_USER / NATS_PASSWORD / NATS_TOKEN reach the server; without them a protected server refuses the start. */
let nats: PrivateNats;
beforeAll(async () => {
  nats = await PrivateNats.start(["--user", "im-service", "--pass", "s3cret-pass-for-test"]);
});
afterAll(async () => {
  await nats?.destroy();
});

describe("connectBus with credentials", () => {
  it("connects with the user and password the server asks for", async () => {
    const bus = await connectBus(nats.url, "auth-test", "authtest", { user: "im-service", pass: "s3cret-pass-for-test" });
    expect(bus.nc.isClosed()).toBe(false);
    await bus.close();
  });

  it("refuses to start without them, naming NATS_URL and never the password", async () => {
    const failure = await connectBus(nats.url, "auth-test", "authtest").catch((error: unknown) => error);
    expect(isStartupError(failure)).toBe(true);
    const wrong = await connectBus(nats.url, "auth-test", "authtest", { user: "im-service", pass: "wrong-pass" }).catch((error: unknown) => error);
    expect(isStartupError(wrong)).toBe(true);
    expect(String((wrong as Error).message)).not.toContain("wrong-pass");
  });
});
