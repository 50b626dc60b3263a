import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import { overlayChart, overlayMetric, overlayView, selectedRuns } from "../src/panel/overlayData";
import { PanelData } from "../src/panel/panelData";
import type { MetricsResult, RunInfo } from "../src/protocol/generated";

function run(host: string, runId: string, loss: Array<[number, number]>, state = "running", extra: MetricsResult["series"] = []): PanelData {
  const data = new PanelData(host, runId);
  const result = {
    host,
    runId,
    series: [{ name: "loss", steps: loss.map(([s]) => s), values: loss.map(([, v]) => v) }, ...extra],
    latest: { loss: loss.length ? loss[loss.length - 1][1] : null },
    run: { host, runId, state } as RunInfo,
  } as unknown as MetricsResult;
  data.applyResult(result);
  return data;
}

const sweepRuns = (name: string): RunInfo[] =>
  name === "lr"
    ? ([
        { host: "box1", runId: "lr-1", workdir: "~/w", state: "running", sweep: "lr" },
        { host: "@lab", runId: "lr-2", workdir: null, state: "queued", sweep: "lr" },
      ] as unknown as RunInfo[])
    : [];

describe("run panel overlay", () => {
  it("means the rows selected, each run once, and a sweep's row its runs", () => {
    const a = { kind: "run", host: "box1", runId: "a" };
    const b = { kind: "run", host: "box2", runId: "b" };
    const again = { kind: "run", host: "box1", runId: "a", sweep: "lr" }; // the same run under its sweep
    assert.deepEqual(selectedRuns(a, [a, b, again], sweepRuns), [
      { host: "box1", runId: "a" },
      { host: "box2", runId: "b" },
    ]);
    // One row clicked with nothing else selected: that row (VS Code passes no list then).
    assert.deepEqual(selectedRuns(b, undefined, sweepRuns), [{ host: "box2", runId: "b" }]);
    assert.deepEqual(selectedRuns({ kind: "sweep", name: "lr" }, undefined, sweepRuns), [
      { host: "box1", runId: "lr-1", workdir: "~/w" },
      { host: "@lab", runId: "lr-2", workdir: null },
    ]);
    // A host's row, or nothing a command could mean, is no run.
    assert.deepEqual(selectedRuns({ kind: "host", alias: "box1" }, [undefined, 3, "x"], sweepRuns), []);
  });

  it("overlays one metric of every run on the union of their steps, a gap where a run has none", () => {
    const runs = [run("box1", "lr-1", [[1, 3], [2, 2]], "completed"), run("box2", "lr-2", [[2, 2.5], [3, 1.5]])];
    assert.equal(overlayMetric(runs), "loss");
    assert.deepEqual(overlayChart(runs, "loss"), {
      x: [1, 2, 3],
      series: [
        { name: "lr-1", values: [3, 2, null], shown: true },
        { name: "lr-2", values: [null, 2.5, 1.5], shown: true },
      ],
    });
    // Unticked in the panel: kept in the chart's data, not drawn.
    assert.deepEqual(
      overlayChart(runs, "loss", new Set(["lr-2"])).series.map((s) => s.shown),
      [true, false],
    );
  });

  it("names runs by id, with the host where two runs share one, and says each one's state and latest value", () => {
    const runs = [run("box1", "r", [[1, 1.25]], "completed"), run("box2", "r", [[1, 2]]), run("box3", "s", [], "queued")];
    const view = overlayView(runs);
    assert.equal(view.title, "3 runs: loss");
    assert.equal(view.state, "1 completed, 1 running, 1 queued");
    assert.deepEqual(view.latest, [
      { name: "r (box1)", value: "1.25" },
      { name: "r (box2)", value: "2" },
      { name: "s", value: "nan" },
    ]);
    assert.deepEqual(
      view.chart.series.map((s) => s.name),
      ["r (box1)", "r (box2)", "s"],
    );
    assert.equal(view.overlay, true);
    assert.deepEqual(view.gpus, { x: [], utilization: [], memory: [] });
  });

  it("follows each run's points as they arrive, and picks the loss among other series", () => {
    const runs = [run("box1", "a", [[1, 3]], "running", [{ name: "lr", steps: [1], values: [0.1] }]), run("box2", "b", [])];
    assert.equal(overlayMetric(runs), "loss");
    runs[1].applyUpdate({ host: "box2", runId: "b", series: [{ name: "loss", steps: [1, 2], values: [4, 3.5] }], latest: { loss: 3.5 } });
    const view = overlayView(runs);
    assert.deepEqual(view.chart.x, [1, 2]);
    assert.deepEqual(view.chart.series[1].values, [4, 3.5]);
    assert.deepEqual(view.latest[1], { name: "b", value: "3.5" });
  });
});
