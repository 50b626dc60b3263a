// Inputs for real runs of the demo trainer on the `local` host: the repository's example
// config with fewer steps and a pause per step, so a run lasts as long as a test needs.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** The repository root: the nearest folder above this file holding examples/config.yaml. */
export function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, "examples", "config.yaml"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find the repository's examples/config.yaml");
    dir = parent;
  }
  return dir;
}

export const exampleDataset = (): string => join(repoRoot(), "examples", "dataset.jsonl");

/** A config at `dir/name.yaml` that trains `steps` steps, pausing `sleep` seconds after each. */
export function demoConfig(dir: string, name: string, steps: number, sleep: number): string {
  const text = readFileSync(join(repoRoot(), "examples", "config.yaml"), "utf8")
    .replace(/^steps:.*$/m, `steps: ${steps}`)
    .replace(/^sleep_per_step:.*$/m, `sleep_per_step: ${sleep}`)
    .replace(/^log_every:.*$/m, "log_every: 1")
    .replace(/^backend:.*$/m, "backend: python");
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, text);
  return path;
}
