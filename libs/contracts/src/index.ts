export { z } from "./zod";
export * from "./errors";
export * from "./time";
export * from "./common";
export * from "./intents";
export * from "./subjects";
