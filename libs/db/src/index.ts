export * from "./database";
export * from "./inbox";
export * from "./config";
export * from "./periodic";
export * from "./statement";
