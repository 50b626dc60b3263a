// A real rtrain daemon of our own: its socket, state and config under a fresh temp dir, so
// tests never touch the user's daemon. Paths stay short (a Unix socket path is < 108 bytes).

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { socketPath } from "../../src/daemon/locations";

export const RTRAIN = process.env.RTRAIN_EXECUTABLE || "rtrain";

export interface IsolatedDaemon {
  dir: string;
  env: NodeJS.ProcessEnv;
  socket: string;
  /** The `workdir` for runs on the `local` host, so runs stay inside `dir` too. */
  workdir: string;
  /** Run `rtrain ARGS` against this daemon; resolves with stdout, rejects with stderr. */
  rtrain(...args: string[]): Promise<string>;
  /** Stop its running runs and the daemon (if any), and remove the directory. */
  cleanup(): Promise<void>;
}

export function isolatedDaemon(): IsolatedDaemon {
  const base = existsSync("/tmp") ? "/tmp" : tmpdir();
  const dir = mkdtempSync(join(base, "rtv-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_RUNTIME_DIR: join(dir, "run"),
    XDG_STATE_HOME: join(dir, "state"),
    XDG_CONFIG_HOME: join(dir, "config"),
    RTRAIN_NO_SPAWN: "",
    // Runs end within seconds here; notice it sooner than the default 5 s.
    RTRAIN_POLL_INTERVAL: "0.5",
  };
  delete env.RTRAIN_SOCKET;
  const rtrain = (...args: string[]): Promise<string> =>
    new Promise((resolve, reject) => {
      execFile(RTRAIN, args, { env, timeout: 60_000 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`rtrain ${args.join(" ")} failed: ${String(stderr).trim() || error.message}`));
        else resolve(String(stdout));
      });
    });
  return {
    dir,
    env,
    socket: socketPath(env),
    workdir: join(dir, "work"),
    rtrain,
    cleanup: async () => {
      if (existsSync(socketPath(env))) {
        // A test that failed half-way may leave a long run going: end it before its folder goes.
        const runs = await rtrain("runs", "--json").then((out) => JSON.parse(out) as Array<{ host: string; runId: string; state: string }>, () => []);
        for (const run of runs.filter((r) => r.state === "running")) {
          await rtrain("stop", run.host, run.runId).catch(() => undefined);
        }
        await rtrain("daemon", "stop").catch(() => undefined);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The absolute path of `command`, searched on PATH as a shell would (undefined if absent). */
export function onPath(command: string): string | undefined {
  if (isAbsolute(command)) return existsSync(command) ? command : undefined;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

export const RTRAIN_MISSING = `\`${RTRAIN}\` is not installed (pip install -e . at the repository root)`;

/** Whether `rtrain` runs here. Tests skip without it, except under CI=true, where it is an error. */
export async function rtrainAvailable(): Promise<boolean> {
  const found = await new Promise<boolean>((resolve) =>
    execFile(RTRAIN, ["--version"], { timeout: 30_000 }, (error) => resolve(!error)),
  );
  if (!found && process.env.CI === "true") throw new Error(RTRAIN_MISSING);
  return found;
}

/** Resolve when `predicate` holds, checking after each `event`; reject after `ms`. */
export function waitFor<T>(
  describe: string,
  subscribe: (check: () => void) => () => void,
  predicate: () => T | undefined | false,
  ms = 20_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let unsubscribe: () => void = () => undefined;
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out waiting for ${describe}`));
    }, ms);
    const check = (): void => {
      const value = predicate();
      if (value) {
        clearTimeout(timer);
        unsubscribe();
        resolve(value);
      }
    };
    unsubscribe = subscribe(check);
    check();
  });
}
