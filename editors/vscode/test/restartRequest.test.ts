// Restart with Code… sends the request a real daemon restarts the run with: the one changed
// file of the picked folder is shipped into the run directory, and the message names it.

import * as assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { restartRequest, restartSummary } from "../src/commands/restartRequest";
import { DaemonConnection } from "../src/daemon/daemonConnection";
import type { RunInfo } from "../src/protocol/generated";
import { isolatedDaemon, RTRAIN, RTRAIN_MISSING, rtrainAvailable, type IsolatedDaemon } from "./support/isolatedDaemon";

describe("restart request", () => {
  let daemon: IsolatedDaemon;
  let connection: DaemonConnection;
  let available = false;

  before(async () => {
    available = await rtrainAvailable();
    daemon = isolatedDaemon();
    connection = new DaemonConnection({
      clientName: "rtrain-vscode-test",
      clientVersion: "0",
      socketPath: () => daemon.socket,
      executable: () => RTRAIN,
      env: () => daemon.env,
    });
  });
  after(async () => {
    connection.dispose();
    await daemon.cleanup();
  });

  it("names the run, its workdir and the code folder only when given", () => {
    const run = { host: "gpubox", runId: "r1", workdir: "~/runs" };
    assert.deepEqual(restartRequest(run), { host: "gpubox", runId: "r1", workdir: "~/runs" });
    assert.deepEqual(restartRequest({ host: "gpubox", runId: "r1" }, "/home/me/proj"), {
      host: "gpubox",
      runId: "r1",
      code: "/home/me/proj",
    });
  });

  async function ended(runId: string, attempt: number): Promise<RunInfo> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { run } = await connection.request("run/status", { host: "local", runId, workdir: daemon.workdir });
      const attempts = run.attempts ?? [];
      if (["completed", "failed"].includes(run.state) && (attempts.length === 0 ? 1 : attempts.length) >= attempt) return run;
      assert.ok(Date.now() < deadline, `${runId} never ended: ${run.state}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  it("ships the changed file of the picked folder and restarts the run", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    await connection.connect(true);
    const code = join(daemon.dir, "project");
    mkdirSync(code);
    writeFileSync(join(code, "train.py"), "print('version one')\n");
    writeFileSync(join(code, "data.txt"), "unchanged\n");
    await connection.request("run/start", {
      host: "local",
      runId: "fixme",
      workdir: daemon.workdir,
      gpus: 0,
      code,
      command: ["{python}", "train.py"],
    });
    const first = await ended("fixme", 1);
    assert.equal(first.state, "completed");

    writeFileSync(join(code, "train.py"), "print('version two')\n");
    const result = await connection.request("run/restart", restartRequest(first, code));
    assert.deepEqual(result.codeShipped, ["train.py"]);
    assert.equal(result.attempt, 2);
    assert.equal(restartSummary(result, true), "restarted fixme on local (attempt 2); shipped 1 changed file: train.py");
    const second = await ended("fixme", 2);
    assert.equal(second.state, "completed");
    const runDir = join(daemon.workdir, "fixme");
    assert.equal(readFileSync(join(runDir, "train.py"), "utf8"), "print('version two')\n");
    assert.match(readFileSync(join(runDir, "train.log"), "utf8"), /version one[\s\S]*version two/);
  });

  it("says when the local code differs and nothing was shipped", () => {
    const base = { run: { host: "gpubox", runId: "r1" }, attempt: 3 } as unknown as Parameters<typeof restartSummary>[0];
    assert.equal(
      restartSummary({ ...base, codeDiffers: ["a.py", "b.py"] }, false),
      "restarted r1 on gpubox (attempt 3) with the code it had; your local code differs in 2 files (a.py, b.py): Restart with Code… ships them",
    );
    assert.equal(restartSummary(base, false), "restarted r1 on gpubox (attempt 3)");
    assert.equal(restartSummary(base, true), "restarted r1 on gpubox (attempt 3); the code was as the run had it, nothing shipped");
  });
});
