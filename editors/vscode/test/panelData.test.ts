import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultShown, numberText, PanelData, progressText } from "../src/panel/panelData";
import type { GpuSample, MetricsResult, MetricsUpdate, RunInfo } from "../src/protocol/generated";
import { runLook } from "../src/tree/presentation";

const update = (extra: Partial<MetricsUpdate>): MetricsUpdate => ({ host: "h", runId: "r", series: [], latest: {}, ...extra });
const sample = (time: number, util: number | undefined, used: number | undefined): GpuSample => ({
  time,
  gpus: [{ index: 0, utilization: util, memoryUsedMib: used, memoryTotalMib: 80_000, processes: [] }],
});

describe("run panel data", () => {
  it("appends points as run/points arrive and aligns every series on the steps", () => {
    const data = new PanelData("h", "r");
    data.applyUpdate(update({ reset: true, series: [{ name: "loss", steps: [1, 2], values: [2.0, 1.5] }] }));
    assert.deepEqual(data.chart().x, [1, 2]);
    data.applyUpdate(
      update({
        series: [
          { name: "loss", steps: [3], values: [1.2] },
          { name: "lr", steps: [2, 4], values: [0.1, 0.05] },
        ],
        latest: { loss: 1.2, lr: 0.05 },
      }),
    );
    const chart = data.chart();
    assert.deepEqual(chart.x, [1, 2, 3, 4]);
    assert.deepEqual(chart.series, [
      { name: "loss", values: [2.0, 1.5, 1.2, null], shown: true },
      { name: "lr", values: [null, 0.1, null, 0.05], shown: false },
    ]);
    // A reset replaces everything; another run's points are not this panel's.
    assert.equal(data.applyUpdate({ ...update({}), runId: "other", series: [{ name: "loss", steps: [9], values: [9] }] }), false);
    data.applyUpdate(update({ reset: true, series: [{ name: "loss", steps: [1], values: [3] }] }));
    assert.deepEqual(data.chart().x, [1]);
  });

  it("keeps NaN as a gap, and lets the user pick the series shown", () => {
    const data = new PanelData("h", "r");
    data.applyUpdate(update({ series: [{ name: "eval_loss", steps: [1, 2], values: [null, 0.9] }, { name: "acc", steps: [1], values: [0.5] }] }));
    assert.deepEqual(data.chart().series.map((s) => [s.name, s.shown]), [["eval_loss", true], ["acc", false]]);
    data.toggle("acc", true);
    data.toggle("eval_loss", false);
    assert.deepEqual(data.chart().series.map((s) => [s.name, s.shown]), [["eval_loss", false], ["acc", true]]);
    assert.deepEqual(data.chart().series[0].values, [null, 0.9]);
  });

  it("shows the loss first, else every loss-like series, else the first", () => {
    assert.deepEqual([...defaultShown(["lr", "loss", "eval_loss"])], ["loss"]);
    assert.deepEqual([...defaultShown(["lr", "eval_loss", "val_loss"])], ["eval_loss"]);
    assert.deepEqual([...defaultShown(["lr", "val_loss", "test_loss"])], ["val_loss", "test_loss"]);
    assert.deepEqual([...defaultShown(["acc", "lr"])], ["acc"]);
  });

  it("turns GPU samples into utilization and memory-percent series, gaps where unknown", () => {
    const result: MetricsResult = {
      host: "h",
      runId: "r",
      series: [],
      latest: {},
      gpuHistory: [sample(10, 50, 40_000), sample(20, undefined, undefined)],
    };
    const data = new PanelData("h", "r");
    data.applyResult(result);
    data.applyUpdate(update({ gpu: sample(30, 90, 20_000) }));
    data.applyUpdate(update({ gpu: sample(30, 90, 20_000) })); // the same sample again
    const gpus = data.gpus();
    assert.deepEqual(gpus.x, [10, 20, 30]);
    assert.deepEqual(gpus.utilization, [{ name: "GPU 0", values: [50, null, 90] }]);
    assert.deepEqual(gpus.memory, [{ name: "GPU 0", values: [50, null, 25] }]);
  });

  it("says progress and values as people read them", () => {
    assert.equal(progressText({ n: 45, total: 100, percent: 45, eta: 75 }), "45% (45/100) · ETA 01:15");
    assert.equal(progressText({ n: 123 }), "123 it");
    assert.equal(progressText(undefined), "");
    assert.equal(numberText(0.41234), "0.4123");
    assert.equal(numberText(2e-5), "2.000e-5");
    assert.equal(numberText(null), "nan");
  });
});

describe("tree rows of watched runs", () => {
  const base: RunInfo = { host: "h", runId: "r", state: "running" };
  it("show progress and the latest loss while the run runs", () => {
    const look = runLook({ ...base, progress: { n: 45, total: 100, percent: 45 }, latest: { loss: 0.41234, lr: 0.01 } });
    assert.equal(look.description, "running · 45% · loss 0.4123");
    assert.match(look.tooltip, /45% \(45\/100\)/);
    assert.equal(runLook({ ...base, latest: { eval_loss: 1.5 } }).description, "running · eval_loss 1.5");
    assert.equal(runLook({ ...base, state: "completed", latest: { loss: 0.1 } }).description, "completed");
  });
});

describe("runs model and watched runs", () => {
  it("says when only what a run's log said changed, so one row is redrawn, not the tree", async () => {
    const { RunsModel } = await import("../src/tree/runsModel");
    const model = new RunsModel();
    const seen: Array<string | undefined> = [];
    model.onDidChange((only) => seen.push(only));
    const run: RunInfo = { host: "h", runId: "r", state: "running", lastSeen: 1 };
    model.applyRun(run);
    model.applyRun({ ...run, lastSeen: 2, latest: { loss: 1.5 }, progress: { n: 3 } });
    model.applyRun({ ...run, state: "completed", latest: { loss: 1.4 } });
    assert.deepEqual(seen, [undefined, "h/r", undefined]);
  });
});
