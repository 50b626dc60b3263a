import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HostInfo, RunInfo } from "../src/protocol/generated";
import { RunNotices } from "../src/runNotices";

const run = (state: RunInfo["state"], extra: Partial<RunInfo> = {}): RunInfo => ({
  host: "gpubox",
  runId: "r1",
  state,
  ...extra,
});

describe("run notices", () => {
  it("learns runs first, then says each end once", () => {
    const notices = new RunNotices();
    assert.deepEqual(notices.runs([run("running")]), []);
    assert.deepEqual(notices.runs([run("running", { progress: undefined })]), []);
    const [ended] = notices.runs([run("completed")]);
    assert.equal(ended.level, "info");
    assert.equal(ended.message, "r1 on gpubox completed.");
    assert.deepEqual(ended.run, { host: "gpubox", runId: "r1" });
    assert.deepEqual(notices.runs([run("completed")]), []);
  });

  it("says nothing of a run that had ended before it was first seen", () => {
    const notices = new RunNotices();
    assert.deepEqual(notices.runs([run("failed", { exitCode: 3 })]), []);
  });

  it("a failure is an error with its reason; a run's unknown spell is no end", () => {
    const notices = new RunNotices();
    notices.runs([run("running")]);
    assert.deepEqual(notices.runs([run("unknown", { reason: "host unreachable" })]), []);
    const [failed] = notices.runs([run("failed", { exitCode: 1, reason: "ValueError: bad shape" })]);
    assert.equal(failed.level, "error");
    assert.equal(failed.message, "r1 on gpubox failed (exit 1, ValueError: bad shape).");
  });

  it("a stall, a limit's stop, and a new attempt's end", () => {
    const notices = new RunNotices();
    notices.runs([run("running")]);
    const [stalled] = notices.runs([run("running", { stalledSince: 100 })]);
    assert.equal(stalled.level, "warning");
    assert.match(stalled.message, /has stalled/);
    const [limited] = notices.runs([run("stopped", { stoppedBy: "stall", reason: "stalled for 30m" })]);
    assert.equal(limited.level, "warning");
    assert.match(limited.message, /stopped by its limit: stopped \(stalled for 30m\)/);
    notices.runs([run("running", { attempts: [{ number: 1, state: "stopped" }, { number: 2, state: "running" }] as never })]);
    const [again] = notices.runs([
      run("lost", { reason: "process gone", attempts: [{ number: 1, state: "stopped" }, { number: 2, state: "lost" }] as never }),
    ]);
    assert.equal(again.level, "error");
  });

  it("a host's guard that ran its command", () => {
    const notices = new RunNotices();
    const host = (at: number, exitCode?: number): HostInfo => ({
      alias: "pod",
      connection: "connected",
      guard: { armed: true, at, command: "runpodctl stop pod", lastFired: { at, exitCode } },
    });
    assert.deepEqual(notices.hosts([host(10)]), []);
    assert.deepEqual(notices.hosts([host(10)]), []);
    const [fired] = notices.hosts([host(20, 1)]);
    assert.equal(fired.level, "error");
    assert.equal(fired.message, "pod's guard ran its command (runpodctl stop pod), which exited 1: the host was idle.");
  });
});
