// The entry pi loads (package.json "pi.extensions"). pi lists an extension under the name of
// its folder, so this folder carries the package's name; the code is the compiled extension.
export { default } from "../../dist/extension/index.js";
