import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectBus, type Bus } from "../src/connection";
import { testNamespace } from "../../../test/support/backends";

/**
 * The two changes patches/@nats-io__nats-core@3.4.0.patch makes to the NATS client (see
 * patches/README.md), held to what they are for: outgoing protocol lines of one event-loop turn
 * leave in one socket write, and an answered request builds no throwaway "cancelled" error.
 * Both fail when the patch is not applied (a reinstall without it, or an upgrade that drops it).
 */
type Internals = {
  protocol: {
    transport: { send(frame: Uint8Array): void };
    muxSubscriptions: { add(request: { cancel(err?: Error): void }): unknown };
  };
};

let bus: Bus;
let internals: Internals;

beforeAll(async () => {
  bus = await connectBus(inject("natsUrl"), "nats-patch-test", testNamespace());
  internals = bus.nc as unknown as Internals;
});

afterAll(async () => {
  await bus?.close();
});

describe("the patched NATS client", () => {
  it("sends what several callbacks of one event-loop turn publish in one socket write", async () => {
    const transport = internals.protocol.transport;
    const original = transport.send.bind(transport);
    const writes: number[] = [];
    transport.send = (frame) => {
      writes.push(frame.byteLength);
      original(frame);
    };
    try {
      // Three publishes in one macrotask, each after a microtask checkpoint (as when several
      // awaited database replies are answered in one turn). The unpatched client queued its flush
      // as a microtask at the first publish, so it ran before the next publish: three writes.
      // Microtasks run in order, so this holds however loaded the machine is.
      await new Promise<void>((resolve) => {
        setImmediate(async () => {
          for (let i = 0; i < 3; i++) {
            bus.nc.publish(bus.subject(`im.test.coalesce.${i}`), `m${i}`);
            await Promise.resolve();
            await Promise.resolve();
          }
          setImmediate(() => setImmediate(resolve));
        });
      });
      expect(writes).toHaveLength(1);
    } finally {
      transport.send = original;
    }
  });

  it("settles an answered request without cancelling it (no 'cancelled' error is built)", async () => {
    const subject = bus.subject(`im.test.echo.${Date.now()}`);
    const sub = bus.nc.subscribe(subject, { callback: (_err, msg) => void msg.respond(msg.data) });
    const mux = internals.protocol.muxSubscriptions;
    const originalAdd = mux.add.bind(mux);
    let cancels = 0;
    mux.add = (request) => {
      const cancel = request.cancel.bind(request);
      request.cancel = (err) => {
        cancels++;
        cancel(err);
      };
      return originalAdd(request);
    };
    try {
      for (let i = 0; i < 5; i++) expect((await bus.nc.request(subject, `ping ${i}`, { timeout: 2000 })).string()).toBe(`ping ${i}`);
      expect(cancels).toBe(0);
      // A request that times out still cancels and rejects.
      await expect(bus.nc.request(bus.subject("im.test.nobody"), "x", { timeout: 50 })).rejects.toThrow();
    } finally {
      mux.add = originalAdd;
      sub.unsubscribe();
    }
  });
});
