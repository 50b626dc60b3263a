// Where the daemon's socket and log are: the same rules as the CLI (rtrain.protocol.locations),
// so the extension and `rtrain` find the same daemon without talking.

import { join } from "node:path";
import { homedir } from "node:os";

export function socketPath(env: NodeJS.ProcessEnv, override?: string): string {
  if (override) return override;
  if (env.RTRAIN_SOCKET) return env.RTRAIN_SOCKET;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, "rtrain", "rtrain.sock");
  return `/tmp/rtrain-${process.getuid?.() ?? 0}/rtrain.sock`;
}

/** The daemon log, for when the daemon cannot be asked (`daemon/info` names it otherwise). */
export function daemonLogPath(env: NodeJS.ProcessEnv): string {
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(state, "rtrain", "daemon.log");
}
