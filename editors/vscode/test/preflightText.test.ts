// Preflight Host shows the daemon's findings in the same words as `rtrain preflight`.

import * as assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { findingLines, preflightSummary } from "../src/commands/preflightText";
import { DaemonConnection } from "../src/daemon/daemonConnection";
import type { PreflightResult } from "../src/protocol/generated";
import { isolatedDaemon, RTRAIN, RTRAIN_MISSING, rtrainAvailable, type IsolatedDaemon } from "./support/isolatedDaemon";

const busy: PreflightResult = {
  host: "gpubox",
  ok: false,
  reasons: ["python3 has no torch; /opt/conda/bin/python has torch 2.1.0+cu118 with CUDA 11.8 and sees 2 GPUs — use --python /opt/conda/bin/python"],
  transport: "exec",
  gpus: [
    { index: 0, name: "NVIDIA H100 80GB HBM3", processes: [], inUseByOther: false },
    { index: 1, name: "NVIDIA H100 80GB HBM3", processes: [{ pid: 4242, name: "python" }], inUseByOther: true },
  ],
  gpusFree: 1,
  findings: [
    { topic: "transport", text: "gpubox over exec", level: "ok" },
    { topic: "python", text: "python3 has no torch; … — use --python /opt/conda/bin/python", level: "problem" },
    { topic: "gpu", text: "GPU 1: NVIDIA H100 80GB HBM3, pid 4242 python (not rtrain's)", level: "warning" },
    { topic: "shell", text: "the login shell prints before every command", level: "info" },
  ],
};

describe("preflight text", () => {
  it("marks each finding by its level, as the CLI does", () => {
    assert.deepEqual(findingLines(busy), [
      "  transport: gpubox over exec",
      "  ✗ python: python3 has no torch; … — use --python /opt/conda/bin/python",
      "  ! gpu: GPU 1: NVIDIA H100 80GB HBM3, pid 4242 python (not rtrain's)",
      "  · shell: the login shell prints before every command",
    ]);
    assert.equal(preflightSummary(busy), "exec, 2 GPUs (NVIDIA H100 80GB HBM3, NVIDIA H100 80GB HBM3), 1 free now, 1 warning");
  });

  it("falls back to the reasons when a daemon sends no findings", () => {
    assert.deepEqual(findingLines({ ...busy, findings: [] }), [`  ${busy.reasons[0]}`]);
  });
});

describe("preflight text against a real daemon", () => {
  let daemon: IsolatedDaemon;
  let connection: DaemonConnection | undefined;
  let available = false;

  before(async () => {
    available = await rtrainAvailable();
    daemon = isolatedDaemon();
  });
  after(async () => {
    connection?.dispose();
    await daemon.cleanup();
  });

  it("shows the lines `rtrain preflight` prints for the same host", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    connection = new DaemonConnection({
      clientName: "rtrain-vscode-test",
      clientVersion: "0",
      socketPath: () => daemon.socket,
      executable: () => RTRAIN,
      env: () => daemon.env,
    });
    await connection.connect(true);
    const result = await connection.request("host/preflight", { host: "local", gpus: 0, workdir: daemon.workdir });
    assert.ok((result.findings ?? []).length > 0, JSON.stringify(result));
    const printed = await daemon.rtrain("preflight", "local", "--gpus", "0", "--workdir", daemon.workdir);
    const [verdict, ...lines] = printed.trimEnd().split("\n");
    assert.equal(verdict, "local is ready to train.");
    // The free space moves between the two looks; every other line is the same.
    const steady = (all: string[]) => all.filter((line) => !line.startsWith("  workdir: "));
    assert.deepEqual(steady(findingLines(result)), steady(lines));
  });
});
