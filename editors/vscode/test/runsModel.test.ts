import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HostInfo, RunInfo } from "../src/protocol/generated";
import { afterText, durationText, formatBytes, formatTime, hostLook, runLook, stateText } from "../src/tree/presentation";
import { RunsModel } from "../src/tree/runsModel";

const run = (runId: string, state: RunInfo["state"], createdAt: number, extra: Partial<RunInfo> = {}): RunInfo => ({
  host: "local",
  runId,
  state,
  createdAt,
  startedAt: createdAt,
  ...extra,
});
const local: HostInfo = { alias: "local", connection: "connected", transport: "local" };

describe("runs model", () => {
  it("lists each host's runs newest first, local after the named hosts", () => {
    const model = new RunsModel();
    model.applySnapshot(
      [local, { alias: "gpu-box", connection: "disconnected" }],
      [run("old", "completed", 100), run("new", "running", 300), run("mid", "failed", 200, { exitCode: 3 })],
    );
    assert.deepEqual(model.hosts().map((h) => h.alias), ["gpu-box", "local"]);
    assert.deepEqual(model.runsOf("local").map((r) => r.runId), ["new", "mid", "old"]);
    assert.equal(model.runningCount(), 1);
    assert.deepEqual(model.runsOf("gpu-box"), []);
  });

  it("groups a sweep's runs in their order, wherever the pool placed them", () => {
    const model = new RunsModel();
    const of = (sweep: string) => ({ sweep, params: { lr: "1" } });
    model.applySnapshot(
      [local],
      [
        run("lr-10", "queued", 400, { host: "@lab", ...of("lr") }),
        run("lr-2", "running", 300, { host: "box2", ...of("lr") }),
        run("lr-1", "completed", 200, { host: "box1", ...of("lr") }),
        run("alone", "running", 100),
      ],
    );
    assert.deepEqual(model.sweeps(), ["lr"]);
    assert.deepEqual(model.runsOfSweep("lr").map((r) => `${r.host}/${r.runId}`), ["box1/lr-1", "box2/lr-2", "@lab/lr-10"]);
    assert.deepEqual(model.runsOfSweep("other"), []);
  });

  it("applies run/changed: a run's new state replaces the old, a new run appears", () => {
    const model = new RunsModel();
    model.applySnapshot([local], [run("a", "running", 100)]);
    let changes = 0;
    model.onDidChange(() => changes++);
    assert.equal(model.applyRun(run("a", "completed", 100, { exitCode: 0 })), false);
    assert.equal(model.applyRun(run("b", "running", 200)), false);
    assert.deepEqual(model.runsOf("local").map((r) => [r.runId, r.state]), [["b", "running"], ["a", "completed"]]);
    assert.equal(changes, 2);
    assert.equal(model.runningCount("local"), 1);
  });

  it("says when a run is on a host it did not know, and shows that host", () => {
    const model = new RunsModel();
    model.applySnapshot([local], []);
    assert.equal(model.applyRun({ ...run("x", "running", 1), host: "gpu-box" }), true);
    assert.deepEqual(model.hosts().map((h) => [h.alias, h.connection]), [["gpu-box", "disconnected"], ["local", "connected"]]);
    assert.equal(model.applyRun({ ...run("y", "running", 2), host: "gpu-box" }), false);
  });

  it("keeps changes that arrive while a snapshot is on its way, and applies them on top", () => {
    const model = new RunsModel();
    model.beginSnapshot();
    model.applyRun(run("a", "stopped", 100));
    model.applyRun(run("c", "running", 300));
    assert.deepEqual(model.allRuns(), [], "nothing shown before the snapshot");
    model.applySnapshot([local], [run("a", "running", 100), run("b", "completed", 200)]);
    assert.deepEqual(model.runsOf("local").map((r) => [r.runId, r.state]), [
      ["c", "running"],
      ["b", "completed"],
      ["a", "stopped"],
    ]);
  });

  it("clears everything when the daemon goes away", () => {
    const model = new RunsModel();
    model.applySnapshot([local], [run("a", "running", 1)]);
    model.clear();
    assert.deepEqual(model.hosts(), []);
    assert.equal(model.runningCount(), 0);
  });
});

describe("presentation", () => {
  it("names every state as the CLI does, with the exit code of a failure", () => {
    assert.equal(stateText(run("a", "failed", 1, { exitCode: 137 })), "failed (exit 137)");
    assert.equal(stateText(run("a", "failed", 1, { signal: 9 })), "failed (signal 9)");
    assert.equal(
      stateText(run("a", "failed", 1, { exitCode: 3, reason: "setup" })),
      "failed (setup, exit 3)",
    );
    for (const state of ["queued", "running", "completed", "stopped", "lost", "unknown"] as const) {
      assert.equal(stateText(run("a", state, 1)), state);
    }
    // What a queued run waits for, and which rank of a torchrun run failed, as the CLI says.
    const waiting = run("a", "queued", 1, { reason: "waiting for 1 GPU(s) of 2: GPU 0 is held by b" });
    assert.equal(stateText(waiting), "queued (waiting for 1 GPU(s) of 2: GPU 0 is held by b)");
    const rank = run("a", "failed", 1, { exitCode: 1, reason: "rank 1: ValueError: no" });
    assert.equal(stateText(rank), "failed (exit 1, rank 1: ValueError: no)");
    // A plain run's last exception line, a death by signal: every launcher says why.
    const plain = run("a", "failed", 1, { exitCode: 1, reason: "ValueError: bad shape" });
    assert.equal(stateText(plain), "failed (exit 1, ValueError: bad shape)");
    // A Slurm job keeps Slurm's own name for how it ended.
    const timedOut = run("a", "failed", 1, { exitCode: 143, schedulerState: "TIMEOUT" });
    assert.equal(stateText(timedOut), "failed (TIMEOUT)");
    assert.equal(stateText(run("a", "stopped", 1, { schedulerState: "CANCELLED" })), "stopped (CANCELLED)");
  });

  it("says how long a run has been stalled, and which of its limits stopped it", () => {
    const now = new Date(2026, 4, 1, 15, 0, 0);
    const stalled = run("a", "running", 1, { stalledSince: now.getTime() / 1000 - 754 });
    assert.equal(stateText(stalled, now), "running (stalled 12m 34s)");
    assert.equal(runLook(stalled, now).icon, "warning");
    assert.equal(runLook(stalled, now).contextValue, "rtrainRun.running");
    const limited = run("a", "stopped", 1, { stoppedBy: "max_duration", reason: "max duration 6h" });
    assert.equal(stateText(limited), "stopped (max duration 6h)");
  });

  it("says how long a running run's log has been still, once it is a while", () => {
    const now = new Date(2026, 4, 1, 15, 0, 0);
    const quiet = run("a", "running", 1, { lastOutputAt: now.getTime() / 1000 - 35 });
    assert.equal(stateText(quiet, now), "running (last output 35s ago)");
    const chatty = run("a", "running", 1, { lastOutputAt: now.getTime() / 1000 - 5 });
    assert.equal(stateText(chatty, now), "running");
    const ended = run("a", "completed", 1, { lastOutputAt: now.getTime() / 1000 - 500 });
    assert.equal(stateText(ended, now), "completed");
  });

  it("shows what a run and a host cost at the host's price", () => {
    const priced = run("a", "completed", 1, { billedSeconds: 6000, pricePerHour: 0.22, cost: 0.3667 });
    assert.ok(runLook(priced).tooltip.includes("cost 0.37 (1h 40m at 0.22/h)"));
    const host = { ...local, pricePerHour: 0.22, upSeconds: 18000, idleSeconds: 3600, cost: 1.1, idleCost: 0.22 };
    assert.equal(hostLook(host, 0).description, "connected · local · cost 1.10");
    assert.ok(hostLook(host, 0).tooltip.endsWith("cost 1.10 while up 5h, 0.22 idle (1h)"));
  });

  it("gives each state its own icon and a menu context", () => {
    const states = ["queued", "running", "completed", "failed", "stopped", "lost", "unknown"] as const;
    const icons = new Set(states.map((s) => runLook(run("a", s, 1)).icon));
    assert.equal(icons.size, states.length);
    assert.equal(runLook(run("a", "running", 1)).contextValue, "rtrainRun.running");
  });

  it("shows state and local start time in a run's description", () => {
    const now = new Date(2026, 4, 1, 15, 0, 0);
    const started = new Date(2026, 4, 1, 14, 3, 7).getTime() / 1000;
    assert.equal(runLook(run("r1", "running", started), now).description, "running · 14:03:07");
    assert.equal(formatTime(new Date(2026, 3, 30, 9, 5).getTime() / 1000, now), "2026-04-30 09:05");
    assert.equal(formatTime(undefined, now), "");
  });

  it("says what follows a run that ended: its fetch and its host's terminate", () => {
    const now = new Date(2026, 4, 1, 15, 0, 0);
    const started = new Date(2026, 4, 1, 14, 3, 7).getTime() / 1000;
    const waiting = run("r1", "running", started, { after: { fetch: "model", into: "/home/u/out", terminate: true } });
    assert.equal(runLook(waiting, now).description, "running · 14:03:07");
    assert.equal(afterText(waiting), "then: waiting");
    const failed = run("r1", "completed", started, {
      after: { fetch: "model", stage: "failed", detail: "fetch failed: model does not exist; gpu not terminated" },
    });
    assert.equal(runLook(failed, now).description, "completed · then failed · 14:03:07");
    assert.ok(runLook(failed, now).tooltip.includes("then: failed: fetch failed: model does not exist; gpu not terminated"));
    assert.equal(afterText(run("r2", "completed", started)), "");
  });

  it("shows a host's connection, transport and running count", () => {
    assert.equal(hostLook(local, 2).description, "connected · local · 2 running");
    assert.equal(hostLook({ alias: "gpu", connection: "failed", lastError: "timed out" }, 0).tooltip, "gpu: failed\ntimed out");
  });

  it("shows a host's guard: when it acts, why it waits, that it fired", () => {
    const now = 10_000;
    const guard = { armed: true, at: now, idleSeconds: 1800, command: "runpodctl stop pod $RUNPOD_POD_ID" };
    const acting = hostLook({ ...local, guard: { ...guard, idleSince: now - 720, actsAt: now + 1080 } }, 0, now);
    assert.equal(acting.description, "connected · local · guard: acts in 18m");
    assert.match(acting.tooltip, /guard: armed, after 30m idle it runs `runpodctl stop pod \$RUNPOD_POD_ID`\nidle for 12m; acts in 18m/);
    const busy = hostLook({ ...local, guard: { ...guard, busy: "run r1 is running" } }, 1, now);
    assert.equal(busy.description, "connected · local · 1 running · guard: busy");
    assert.match(busy.tooltip, /busy: run r1 is running/);
    const fired = hostLook(
      { ...local, guard: { ...guard, idleSince: now - 2000, lastFired: { at: now - 100, exitCode: 0 } } },
      0,
      now,
    );
    assert.equal(fired.description, "connected · local · guard: fired");
    assert.match(fired.tooltip, /last fired .* \(exit 0\)/);
    assert.match(hostLook({ ...local, guard: { ...guard, stalledIdle: true } }, 0, now).tooltip, /\$RUNPOD_POD_ID` \(stalled runs idle\)/);
    assert.equal(hostLook({ ...local, guard: { armed: false, at: now } }, 0, now).description, "connected · local · guard off");
    assert.equal(hostLook(local, 0, now).description, "connected · local");
    assert.deepEqual([durationText(45), durationText(754), durationText(3600), durationText(3900)], ["45s", "12m 34s", "1h", "1h 5m"]);
  });

  it("formats sizes", () => {
    assert.equal(formatBytes(512), "512 B");
    assert.equal(formatBytes(1536), "1.5 KB");
    assert.equal(formatBytes(3 * 1024 ** 3), "3.0 GB");
  });
});
