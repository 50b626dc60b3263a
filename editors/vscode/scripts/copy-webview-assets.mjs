// The run panel's page and its chart library (uPlot, from node_modules) into out/webview,
// which the .vsix carries: the webview loads them from the extension, never from a network.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "out", "webview");
mkdirSync(out, { recursive: true });
for (const [from, name] of [
  [join(root, "node_modules", "uplot", "dist", "uPlot.iife.min.js"), "uPlot.iife.min.js"],
  [join(root, "node_modules", "uplot", "dist", "uPlot.min.css"), "uPlot.min.css"],
  [join(root, "node_modules", "uplot", "LICENSE"), "uPlot.LICENSE"],
  [join(root, "webview", "runPanel.js"), "runPanel.js"],
  [join(root, "webview", "runPanel.css"), "runPanel.css"],
]) {
  copyFileSync(from, join(out, name));
}
console.log(`copy-webview-assets: uPlot and the run panel -> ${out}`);
