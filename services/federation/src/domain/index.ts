export * from "./governance";
export * from "./delegation";
export { toNameSet, type NameSet } from "./sorted-set";
