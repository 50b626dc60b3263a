// Several runs' curves in one chart (the run panel opened on several runs selected in the
// tree, or on a sweep): which runs a selection means, and one metric of each run, aligned on
// the steps, one series per run. No VS Code here, so it is unit-tested.

import type { RunInfo } from "../protocol/generated";
import { runKey, type RunKey } from "../tree/runsModel";
import { defaultShown, numberText, type ChartData, type PanelData, type PanelView } from "./panelData";

export interface RunRef {
  host: string;
  runId: string;
  workdir?: string | null;
}

/** A tree node as a command receives it: a run's row or a sweep's (runsTreeProvider.ts). */
type Node = { kind: string; host?: unknown; runId?: unknown; name?: unknown };

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && typeof (value as Node).kind === "string";
}

/** The runs a command on the tree means: VS Code passes the row clicked and, when several
 * rows are selected, all of them. A sweep's row means its runs. Each run once, in order. */
export function selectedRuns(clicked: unknown, selected: unknown, runsOfSweep: (name: string) => RunInfo[]): RunRef[] {
  const nodes = Array.isArray(selected) && selected.length > 0 ? selected : [clicked];
  const runs = new Map<RunKey, RunRef>();
  for (const node of nodes) {
    if (!isNode(node)) continue;
    if (node.kind === "run" && typeof node.host === "string" && typeof node.runId === "string") {
      runs.set(runKey({ host: node.host, runId: node.runId }), { host: node.host, runId: node.runId });
    } else if (node.kind === "sweep" && typeof node.name === "string") {
      for (const run of runsOfSweep(node.name)) {
        runs.set(runKey(run), { host: run.host, runId: run.runId, workdir: run.workdir });
      }
    }
  }
  return [...runs.values()];
}

/** The metric overlaid: the runs' loss (as one run's panel picks it), else the first name. */
export function overlayMetric(runs: PanelData[]): string | undefined {
  const names = [...new Set(runs.flatMap((run) => run.names()))];
  return [...defaultShown(names)][0];
}

/** A run's label in the overlay: its id, with its host where two runs share an id. */
function labels(runs: PanelData[]): string[] {
  const ids = runs.map((run) => run.runId);
  return runs.map((run) => (ids.filter((id) => id === run.runId).length > 1 ? `${run.runId} (${run.host})` : run.runId));
}

/** `metric` of every run on one x axis (the union of their steps), one series per run;
 * `hidden`: the labels the user unticked. */
export function overlayChart(runs: PanelData[], metric: string, hidden: ReadonlySet<string> = new Set()): ChartData {
  const steps = new Set<number>();
  for (const run of runs) for (const step of run.points(metric)?.steps ?? []) steps.add(step);
  const x = [...steps].sort((a, b) => a - b);
  const at = new Map(x.map((step, index) => [step, index]));
  const names = labels(runs);
  const series = runs.map((run, i) => {
    const values: Array<number | null> = new Array(x.length).fill(null);
    const points = run.points(metric);
    points?.steps.forEach((step, j) => {
      values[at.get(step) as number] = points.values[j];
    });
    return { name: names[i], values, shown: !hidden.has(names[i]) };
  });
  return { x, series };
}

/** What the panel's page draws for an overlay: a title naming the runs and the metric, each
 * run's state, and each run's latest value of the metric; no GPU charts (several hosts). */
export function overlayView(runs: PanelData[], hidden: ReadonlySet<string> = new Set()): PanelView {
  const metric = overlayMetric(runs);
  const names = labels(runs);
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.state, (counts.get(run.state) ?? 0) + 1);
  return {
    title: `${runs.length} runs: ${metric ?? "no metric yet"}`,
    state: [...counts.entries()].map(([state, n]) => `${n} ${state}`).join(", "),
    progress: "",
    latest: metric === undefined ? [] : runs.map((run, i) => ({ name: names[i], value: numberText(run.latest[metric]) })),
    chart: metric === undefined ? { x: [], series: [] } : overlayChart(runs, metric, hidden),
    gpus: { x: [], utilization: [], memory: [] },
    overlay: true,
  };
}
