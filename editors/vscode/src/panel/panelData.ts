// What a run panel shows, built from `run/metrics` and `run/points`: the series (appended as
// points arrive, replaced on a reset), progress, the latest values and the host's GPU samples,
// turned into the arrays the chart library draws. No VS Code here, so it is unit-tested.

import type { GpuSample, MetricsResult, MetricsUpdate, Progress } from "../protocol/generated";

/** Samples of the host's GPUs kept for the charts (the daemon keeps as many). */
export const GPU_HISTORY = 360;
/** Points per series kept here, as the daemon keeps at most as many. */
export const MAX_POINTS = 4096;

interface Points {
  steps: number[];
  values: Array<number | null>;
}

/** uPlot's aligned data: one x array, then one y array per series (null where missing). */
export interface ChartData {
  x: number[];
  series: Array<{ name: string; values: Array<number | null>; shown: boolean }>;
}

export interface GpuChartData {
  /** Sample times, epoch seconds. */
  x: number[];
  utilization: Array<{ name: string; values: Array<number | null> }>;
  /** Memory used, in percent of the GPU's total. */
  memory: Array<{ name: string; values: Array<number | null> }>;
}

export interface PanelView {
  title: string;
  state: string;
  progress: string;
  latest: Array<{ name: string; value: string }>;
  chart: ChartData;
  gpus: GpuChartData;
  /** Several runs' curves in one chart (overlayData.ts): the page shows no GPU charts. */
  overlay?: boolean;
}

const LOSS_NAMES = ["loss", "train_loss", "train/loss", "eval_loss"];

/** The series shown before the user picks: the loss (every series with "loss" in its name
 * when there is no plain one), else the first. Scales differ too much to show all at once. */
export function defaultShown(names: string[]): Set<string> {
  const plain = LOSS_NAMES.find((n) => names.includes(n));
  if (plain) return new Set([plain]);
  const lossy = names.filter((n) => n.includes("loss"));
  if (lossy.length > 0) return new Set(lossy);
  return new Set(names.slice(0, 1));
}

export class PanelData {
  private series = new Map<string, Points>();
  private gpuSamples: GpuSample[] = [];
  private shown: Set<string> | undefined;
  latest: Record<string, number | null> = {};
  progress: Progress | undefined;
  state = "running";

  constructor(readonly host: string, readonly runId: string) {}

  /** The whole answer of `run/metrics`: everything is replaced. */
  applyResult(result: MetricsResult): void {
    this.series.clear();
    this.appendSeries(result.series);
    this.latest = { ...result.latest };
    this.progress = result.progress ?? undefined;
    this.gpuSamples = (result.gpuHistory ?? []).slice(-GPU_HISTORY);
    if (result.run) this.state = result.run.state;
  }

  /** A `run/points`: new points appended, or (reset) everything replaced. */
  applyUpdate(update: MetricsUpdate): boolean {
    if (update.host !== this.host || update.runId !== this.runId) return false;
    if (update.reset) this.series.clear();
    this.appendSeries(update.series);
    this.latest = { ...update.latest };
    if (update.progress !== undefined && update.progress !== null) this.progress = update.progress;
    if (update.gpu) {
      const last = this.gpuSamples[this.gpuSamples.length - 1];
      if (!last || update.gpu.time > last.time) this.gpuSamples.push(update.gpu);
      if (this.gpuSamples.length > GPU_HISTORY) this.gpuSamples.splice(0, this.gpuSamples.length - GPU_HISTORY);
    }
    return true;
  }

  /** Show or hide one series (the panel's checkboxes). */
  toggle(name: string, shown: boolean): void {
    const set = new Set(this.shownSet());
    if (shown) set.add(name);
    else set.delete(name);
    this.shown = set;
  }

  names(): string[] {
    return [...this.series.keys()];
  }

  /** One series' points as kept (undefined: no such series). */
  points(name: string): { steps: readonly number[]; values: ReadonlyArray<number | null> } | undefined {
    return this.series.get(name);
  }

  pointCount(name: string): number {
    return this.series.get(name)?.steps.length ?? 0;
  }

  chart(): ChartData {
    const steps = new Set<number>();
    for (const points of this.series.values()) for (const step of points.steps) steps.add(step);
    const x = [...steps].sort((a, b) => a - b);
    const at = new Map(x.map((step, index) => [step, index]));
    const shown = this.shownSet();
    const series = [...this.series.entries()].map(([name, points]) => {
      const values: Array<number | null> = new Array(x.length).fill(null);
      points.steps.forEach((step, i) => {
        values[at.get(step) as number] = points.values[i];
      });
      return { name, values, shown: shown.has(name) };
    });
    return { x, series };
  }

  gpus(): GpuChartData {
    const x = this.gpuSamples.map((s) => s.time);
    const indices = [...new Set(this.gpuSamples.flatMap((s) => s.gpus.map((g) => g.index)))].sort((a, b) => a - b);
    const column = (index: number, pick: (g: GpuSample["gpus"][number]) => number | null): Array<number | null> =>
      this.gpuSamples.map((s) => {
        const gpu = s.gpus.find((g) => g.index === index);
        return gpu ? pick(gpu) : null;
      });
    return {
      x,
      utilization: indices.map((index) => ({ name: `GPU ${index}`, values: column(index, (g) => g.utilization ?? null) })),
      memory: indices.map((index) => ({
        name: `GPU ${index}`,
        values: column(index, (g) =>
          g.memoryUsedMib !== undefined && g.memoryUsedMib !== null && g.memoryTotalMib
            ? Math.round((1000 * g.memoryUsedMib) / g.memoryTotalMib) / 10
            : null,
        ),
      })),
    };
  }

  view(): PanelView {
    return {
      title: `${this.runId} on ${this.host}`,
      state: this.state,
      progress: progressText(this.progress),
      latest: Object.entries(this.latest).map(([name, value]) => ({ name, value: numberText(value) })),
      chart: this.chart(),
      gpus: this.gpus(),
    };
  }

  /** Until the user picks, the default follows the series as they appear. */
  private shownSet(): Set<string> {
    return this.shown ?? defaultShown(this.names());
  }

  private appendSeries(list: MetricsUpdate["series"]): void {
    for (const one of list) {
      let points = this.series.get(one.name);
      if (points === undefined) {
        points = { steps: [], values: [] };
        this.series.set(one.name, points);
      }
      points.steps.push(...one.steps);
      points.values.push(...one.values);
      if (points.steps.length > MAX_POINTS) {
        points.steps.splice(0, points.steps.length - MAX_POINTS);
        points.values.splice(0, points.values.length - MAX_POINTS);
      }
    }
  }
}

/** "45% (45/100) · ETA 00:15", "123 it", or "" without a bar. */
export function progressText(progress: Progress | undefined | null): string {
  if (!progress) return "";
  const n = trim(progress.n);
  if (progress.total) {
    const percent = progress.percent ?? Math.round((1000 * progress.n) / progress.total) / 10;
    const eta = progress.eta !== undefined && progress.eta !== null ? ` · ETA ${clock(progress.eta)}` : "";
    return `${trim(percent)}% (${n}/${trim(progress.total)})${eta}`;
  }
  return `${n} it`;
}

export function clock(seconds: number): string {
  const whole = Math.floor(seconds);
  const two = (v: number): string => String(v).padStart(2, "0");
  const hours = Math.floor(whole / 3600);
  const rest = whole % 3600;
  return hours > 0 ? `${hours}:${two(Math.floor(rest / 60))}:${two(rest % 60)}` : `${two(Math.floor(rest / 60))}:${two(rest % 60)}`;
}

export function numberText(value: number | null | undefined): string {
  if (value === null || value === undefined) return "nan";
  if (value !== 0 && (Math.abs(value) < 1e-3 || Math.abs(value) >= 1e5)) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}

function trim(value: number): string {
  return String(Number(value.toFixed(1)));
}
