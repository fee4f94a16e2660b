export * from "./database";
export * from "./inbox";
export * from "./statement";
export * from "./table-sql";
