import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { healthCommand, type Caller } from "@intentmesh/contracts";
import type { Bus, BusClient } from "@intentmesh/bus";

/**
 * One service of the cluster as a process of its own (its src/main.ts under tsx), for fault tests
 * that kill it (SIGKILL) and start it again, as Kubernetes would restart a pod.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export type { ServiceName } from "@intentmesh/contracts";
import type { ServiceName } from "@intentmesh/contracts";

/** Starts services/<service>/src/main.ts with the given environment on top of this process's. */
export function startServiceProcess(service: ServiceName, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", path.join(root, `services/${service}/src/main.ts`)], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "silent", ...env },
    stdio: "ignore",
  });
}

/** SIGKILL: no shutdown hook runs, whatever was in flight is cut where it stood. Resolves once the process is gone. */
export async function killServiceProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** Asks the service's health command until it answers (about 20 s at most). */
export async function untilHealthy(client: BusClient, service: ServiceName, caller: Caller): Promise<{ outbox_backlog: number }> {
  for (let i = 0; i < 200; i++) {
    try {
      return await client.request(healthCommand(service), caller, {});
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`the ${service} service did not become healthy`);
}

/** Waits until the service's outbox relay has published everything committed (about 10 s at most). */
export async function untilOutboxDrained(client: BusClient, service: ServiceName, caller: Caller): Promise<void> {
  for (let i = 0; i < 100 && (await untilHealthy(client, service, caller)).outbox_backlog > 0; i++) await new Promise((r) => setTimeout(r, 100));
}

/** The most messages readStream asks for in one pull. */
const READ_BATCH = 10_000;
/** Empty pulls in a row after which readStream gives up (each waits up to READ_WAIT_MS). */
const READ_IDLE_PULLS = 3;
const READ_WAIT_MS = 5_000;

/**
 * Every message a stream holds when called, oldest first, read with an ordered consumer and mapped
 * by `map`. Pulls in batches until it has them all; a stream that stops answering before that is
 * an error naming how far it got, never a short list (the scale benchmark's exactly-once check
 * reads hundreds of thousands of messages, and a short list would read as lost writes).
 */
export async function readStream<T>(bus: Bus, stream: string, map: (msg: JsMsg) => T): Promise<T[]> {
  const consumer = await bus.js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  const out: T[] = [];
  const { state } = await bus.jsm.streams.info(stream);
  let idle = 0;
  while (out.length < state.messages) {
    const batch = await consumer.fetch({ max_messages: Math.min(READ_BATCH, state.messages - out.length), expires: READ_WAIT_MS });
    let got = 0;
    for await (const msg of batch) {
      out.push(map(msg));
      got += 1;
    }
    if (got) idle = 0;
    else if (++idle >= READ_IDLE_PULLS) throw new Error(`read ${out.length} of the ${state.messages} messages of stream ${stream}: ${READ_IDLE_PULLS} pulls in a row brought none`);
  }
  return out;
}
