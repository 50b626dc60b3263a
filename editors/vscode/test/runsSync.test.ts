// The tree model fed by a real daemon: runs started on the `local` host appear, change state
// and survive a daemon restart, all from `run/changed` notifications (no polling here).

import * as assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LogCursor } from "../src/log/logCursor";
import { DaemonConnection } from "../src/daemon/daemonConnection";
import type { RunInfo } from "../src/protocol/generated";
import { RpcError } from "../src/protocol/rpcError";
import { RunsModel } from "../src/tree/runsModel";
import { RunsSync } from "../src/tree/runsSync";
import { demoConfig, exampleDataset } from "./support/demoRun";
import { isolatedDaemon, RTRAIN, RTRAIN_MISSING, rtrainAvailable, waitFor, type IsolatedDaemon } from "./support/isolatedDaemon";

describe("runs model fed by a real daemon", () => {
  let daemon: IsolatedDaemon;
  let connection: DaemonConnection;
  let model: RunsModel;
  let sync: RunsSync;
  let available = false;

  const stateOf = (runId: string): RunInfo["state"] | undefined => model.run("local", runId)?.state;
  const untilState = (runId: string, state: RunInfo["state"], ms?: number): Promise<true> =>
    waitFor(`${runId} ${state}`, (check) => model.onDidChange(check), () => stateOf(runId) === state || undefined, ms);
  const start = (runId: string, steps: number, sleep: number) =>
    connection.request("run/start", {
      host: "local",
      config: demoConfig(daemon.dir, runId, steps, sleep),
      dataset: exampleDataset(),
      runId,
      gpus: 0,
      workdir: daemon.workdir,
    });

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
    model = new RunsModel();
    sync = new RunsSync(connection, model);
  });
  after(async () => {
    sync.dispose();
    connection.dispose();
    await daemon.cleanup();
  });

  it("shows the local host once connected", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const loaded = waitFor("local host", (c) => model.onDidChange(c), () => model.host("local") !== undefined || undefined);
    await connection.connect(true);
    await loaded;
    assert.equal(model.host("local")?.transport, "local");
  });

  it("sees a run started by another client appear as running, then turn completed", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const started = await start("quick", 20, 0.05);
    assert.equal(started.run.state, "running");
    await untilState("quick", "running");
    await untilState("quick", "completed", 60_000);
    assert.equal(model.run("local", "quick")?.exitCode, 0);
  });

  it("tails a running run by offset, cancels the tail, and sees the run stopped", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    await start("long", 100_000, 0.05);
    await untilState("long", "running");
    assert.equal(model.runningCount("local"), 1);

    const cursor = new LogCursor();
    let text = "";
    const abort = new AbortController();
    const stopListening = connection.onNotification((n) => {
      if (n.method !== "run/log" || n.params.runId !== "long") return;
      text += cursor.accept(n.params).text;
      if (/step 3 \|/.test(text)) abort.abort();
    });
    const tail = connection.request("run/tail", { host: "local", runId: "long", workdir: daemon.workdir, offset: 0 }, { signal: abort.signal });
    const error = await tail.then(
      () => assert.fail("the tail ended by itself"),
      (e: unknown) => e as RpcError,
    );
    stopListening();
    assert.equal(error.kind, "cancelled");
    assert.match(text, /step 1 \|/);
    assert.ok(cursor.nextOffset >= Buffer.byteLength(text));

    // Reattaching from the cursor's offset gives only newer bytes.
    const seen = cursor.nextOffset;
    const again = new AbortController();
    const more: string[] = [];
    const offsets: number[] = [];
    const stopAgain = connection.onNotification((n) => {
      if (n.method !== "run/log" || n.params.runId !== "long") return;
      offsets.push(n.params.offset);
      more.push(cursor.accept(n.params).text);
      again.abort();
    });
    await connection
      .request("run/tail", { host: "local", runId: "long", workdir: daemon.workdir, offset: seen }, { signal: again.signal })
      .catch(() => undefined);
    stopAgain();
    assert.ok(more.join("").length > 0);
    assert.ok(offsets.every((o) => o >= seen), "a resumed tail never repeats bytes");

    const stopped = await connection.request("run/stop", { host: "local", runId: "long", workdir: daemon.workdir });
    assert.equal(stopped.outcome, "stopped");
    await untilState("long", "stopped");
    assert.equal(model.runningCount(), 0);
  });

  it("fails a pending tail when the daemon stops, and reloads the runs from the next daemon", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    await start("survivor", 100_000, 0.05);
    await untilState("survivor", "running");
    const tail = connection
      .request("run/tail", { host: "local", runId: "survivor", workdir: daemon.workdir, offset: 0 })
      .then(
        () => assert.fail("the tail ended"),
        (e: unknown) => e as RpcError,
      );
    const cleared = waitFor("model cleared", (c) => model.onDidChange(c), () => model.allRuns().length === 0 || undefined);
    await daemon.rtrain("daemon", "stop");
    const error = await tail;
    assert.equal(error.kind, "daemon_unavailable");
    await cleared;

    await daemon.rtrain("daemon", "start");
    await untilState("survivor", "running");
    assert.deepEqual(model.runsOf("local").map((r) => r.runId), ["survivor", "long", "quick"]);
    await connection.request("run/stop", { host: "local", runId: "survivor", workdir: daemon.workdir });
    await untilState("survivor", "stopped");
  });

  it("drops a run another client removes", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const gone = waitFor("quick removed", (c) => model.onDidChange(c), () => model.run("local", "quick") === undefined || undefined);
    await daemon.rtrain("rm", "local", "quick", "--workdir", daemon.workdir);
    await gone;
    assert.deepEqual(model.runsOf("local").map((r) => r.runId), ["survivor", "long"]);
  });
});
