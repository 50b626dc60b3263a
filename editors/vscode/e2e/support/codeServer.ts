// A real VS Code for the end-to-end test: code-server (the Node extension host, as on a
// desktop) with the packaged extension installed, in its own process group so that
// stopping it also stops its file watcher.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";

/** The extension's folder (editors/vscode), from out/e2e/support. */
export const EXTENSION_ROOT = resolve(__dirname, "..", "..", "..");

export interface Tools {
  codeServer: string;
  nodeBin: string;
  chromium: string;
  vsix: string;
}

/** Where ci.sh put the tools (RTRAIN_E2E_TOOLS overrides); lists what is missing. */
export function findTools(): { tools: Tools; missing: string[] } {
  const root = process.env.RTRAIN_E2E_TOOLS || join(EXTENSION_ROOT, ".e2e-tools");
  const tools: Tools = {
    codeServer: join(root, "code-server", "node_modules", "code-server", "out", "node", "entry.js"),
    nodeBin: join(root, "node24", "node_modules", "node", "bin"),
    chromium: process.env.RTRAIN_E2E_CHROMIUM || "/usr/bin/chromium",
    vsix: process.env.RTRAIN_E2E_VSIX || join(EXTENSION_ROOT, "rtrain.vsix"),
  };
  const missing = [
    [tools.codeServer, "code-server (run ci.sh)"],
    [join(tools.nodeBin, "node"), "node 24 (run ci.sh)"],
    [tools.chromium, "chromium (apt-get install chromium)"],
    [tools.vsix, "the packaged extension (npm run package)"],
  ]
    .filter(([path]) => !existsSync(path))
    .map(([path, what]) => `${what}: ${path}`);
  return { tools, missing };
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}

export class CodeServer {
  private process: ChildProcess | undefined;
  readonly url: string;

  private constructor(
    readonly port: number,
    readonly folder: string,
  ) {
    this.url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
  }

  /** Install the .vsix, write the user `settings`, then start code-server on `folder`;
   * resolves once /healthz answers. */
  static async start(
    tools: Tools,
    dir: string,
    folder: string,
    env: NodeJS.ProcessEnv,
    settings: Record<string, unknown>,
  ): Promise<CodeServer> {
    const userData = join(dir, "code-user");
    const extensions = join(dir, "code-extensions");
    mkdirSync(join(userData, "User"), { recursive: true });
    mkdirSync(extensions, { recursive: true });
    writeFileSync(join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
    const serverEnv = { ...env, PATH: `${tools.nodeBin}:${env.PATH ?? ""}` };
    const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
    await run(join(tools.nodeBin, "node"), [tools.codeServer, ...common, "--install-extension", tools.vsix], serverEnv);

    const server = new CodeServer(await freePort(), folder);
    const log = openSync(join(dir, "code-server.log"), "a");
    server.process = spawn(
      join(tools.nodeBin, "node"),
      [
        tools.codeServer,
        ...common,
        "--bind-addr",
        `127.0.0.1:${server.port}`,
        "--auth",
        "none",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        folder,
      ],
      { env: serverEnv, detached: true, stdio: ["ignore", log, log] },
    );
    await server.waitHealthy(60_000);
    return server;
  }

  /** Stop code-server and everything it started (its whole process group). */
  stop(): void {
    const pid = this.process?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      // Already gone.
    }
    this.process = undefined;
  }

  private async waitHealthy(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.process?.exitCode !== null) throw new Error(`code-server exited with ${this.process?.exitCode}`);
      try {
        const answer = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (answer.ok) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) throw new Error("code-server did not answer /healthz");
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolveRun, reject) =>
    execFile(file, args, { env, timeout: 120_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${args.join(" ")}: ${String(stderr).trim() || error.message}`)) : resolveRun(String(stdout)),
    ),
  );
}
