export * from "./env.js";
export * from "./events.js";
export * from "./inbox.js";
export * from "./layout.js";
export * from "./meta.js";
export * from "./result.js";
export * from "./tree.js";
export * from "./usage.js";
