export * from "./connection";
export * from "./streams";
export * from "./trace";
export * from "./rpc";
export * from "./outbox";
export * from "./consumer";
export * from "./event-log";
export * from "./system-events";
