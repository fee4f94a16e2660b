export * from "./database";
export * from "./inbox";
export * from "./statement";
export * from "./statement-names";
export * from "./table-sql";
