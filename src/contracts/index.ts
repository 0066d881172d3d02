export * from "./events.js";
export * from "./meta.js";
export * from "./result.js";
export * from "./tree.js";
