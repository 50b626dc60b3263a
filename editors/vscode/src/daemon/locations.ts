// Where the daemon's socket and log are: the rules are the CLI's own (rtrain.protocol.locations),
// generated from the published schema, so the extension and `rtrain` find the same daemon.

import { homedir } from "node:os";
import { LOCATIONS, type LocationRule } from "../protocol/generated";

function place(rules: readonly LocationRule[] | undefined, env: NodeJS.ProcessEnv): string {
  for (const rule of rules ?? []) {
    const value = rule.variable === null ? "" : (env[rule.variable] ?? "");
    if (rule.variable !== null && value === "") continue;
    let path = rule.path
      .replace("{home}", env.HOME || homedir())
      .replace("{uid}", String(process.getuid?.() ?? 0));
    if (rule.variable !== null) path = path.replace(`{${rule.variable}}`, value);
    return path;
  }
  throw new Error("no location rule applies");
}

export function socketPath(env: NodeJS.ProcessEnv, override?: string): string {
  if (override) return override;
  return place(LOCATIONS.socketPath, env);
}

/** The daemon log, for when the daemon cannot be asked (`daemon/info` names it otherwise). */
export function daemonLogPath(env: NodeJS.ProcessEnv): string {
  return place(LOCATIONS.logPath, env);
}
