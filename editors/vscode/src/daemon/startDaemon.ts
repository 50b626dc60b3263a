// Starting the daemon the way the CLI does: `rtrain daemon start`, which is race-safe
// (many windows at once -> one daemon) and returns once the daemon answers.

import { execFile } from "node:child_process";
import { RpcError } from "../protocol/rpcError";

const START_TIMEOUT_MS = 30_000;

export function startDaemon(executable: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(executable, ["daemon", "start"], { env, timeout: START_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (!error) {
        resolve();
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "EACCES") {
        reject(
          new RpcError(
            0,
            `Cannot run \`${executable}\` to start the daemon (${code}); install rtrain or set rtrain.executable`,
            undefined,
            "rtrain_not_found",
          ),
        );
        return;
      }
      const lastLine = String(stderr).trim().split("\n").pop() || error.message;
      reject(
        new RpcError(0, `\`${executable} daemon start\` failed: ${lastLine}`, undefined, "daemon_start_failed"),
      );
    });
  });
}
