import type { z } from "zod";
import type { Clock, ServiceName } from "@intentmesh/contracts";
import type { Bus } from "@intentmesh/bus";
import type { DatabaseHandle } from "@intentmesh/db";
import type { BaseConfig, Logger } from "@intentmesh/telemetry";

/** What every back-end service is started with, however it is started. */
export interface ServiceConnections {
  bus: Bus;
  database: DatabaseHandle;
  logger: Logger;
  /** The server clock; tests pass a ManualClock. */
  clock?: Clock;
}

export interface RunningService {
  stop(): Promise<void>;
}

/** A service's own start options: everything its start function takes besides the connections. */
export type OwnOptions<StartOptions extends ServiceConnections> = Omit<StartOptions, keyof ServiceConnections>;

/**
 * One back-end service, defined once (its folder's `src/manifest.ts`): its name, the environment
 * variables it reads besides those every service reads, how they become its start options, and
 * how it starts. Its own process (`src/main.ts`, through runService), README command 1
 * (scripts/start-cluster.ts), the test cluster and the benchmarks all start it from this, so a
 * documented variable means the same wherever the service runs.
 */
export interface ServiceDefinition<
  Env extends z.ZodObject = z.ZodObject,
  StartOptions extends ServiceConnections = ServiceConnections,
  Service extends RunningService = RunningService,
  Name extends ServiceName = ServiceName,
> {
  name: Name;
  /** The service's own variables (zod, with their defaults). */
  env: Env;
  /** The start options the environment sets (the others keep the service's defaults). */
  options: (config: BaseConfig & z.infer<Env>) => Partial<OwnOptions<StartOptions>>;
  start: (options: StartOptions) => Promise<Service>;
}

/** Declares a service definition, keeping its precise types (the test cluster reads them). */
export const defineService = <Env extends z.ZodObject, StartOptions extends ServiceConnections, Service extends RunningService, const Name extends ServiceName>(
  definition: ServiceDefinition<Env, StartOptions, Service, Name>,
): ServiceDefinition<Env, StartOptions, Service, Name> => definition;

/** Any service's definition (a list of services holds several kinds). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each entry keeps its precise type where it is declared
export type AnyServiceDefinition = ServiceDefinition<any, any, RunningService>;

/** The service a definition starts. */
export type ServiceOf<D> = D extends ServiceDefinition<z.ZodObject, ServiceConnections, infer S> ? S : never;
/** What a definition's start takes besides the connections (options and test seams). */
export type OptionsOf<D> = D extends ServiceDefinition<z.ZodObject, infer O, RunningService> ? OwnOptions<O> : never;
