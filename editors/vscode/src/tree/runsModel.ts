// What the sidebar shows, without VS Code: hosts and their runs, kept current from a
// `runs/list` + `hosts/list` snapshot and the `run/changed` notifications that follow it.

import type { HostInfo, RunInfo } from "../protocol/generated";

export type RunKey = `${string}/${string}`;

export function runKey(run: { host: string; runId: string }): RunKey {
  return `${run.host}/${run.runId}`;
}

export class RunsModel {
  private readonly hostInfo = new Map<string, HostInfo>();
  private readonly runs = new Map<RunKey, RunInfo>();
  private readonly listeners = new Set<(only?: RunKey) => void>();
  // Notifications that arrived while a snapshot was being fetched; applied on top of it.
  private held: RunInfo[] | null = null;

  /** `only` is set when nothing changed but what one run's log said (progress, latest). */
  onDidChange(listener: (only?: RunKey) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Call before asking for a snapshot: changes from now on are kept until `applySnapshot`. */
  beginSnapshot(): void {
    this.held ??= [];
  }

  /** Replace everything with the daemon's answer, then replay the changes it did not include. */
  applySnapshot(hosts: HostInfo[], runs: RunInfo[]): void {
    this.hostInfo.clear();
    this.runs.clear();
    for (const host of hosts) this.hostInfo.set(host.alias, host);
    for (const run of runs) this.runs.set(runKey(run), run);
    const held = this.held ?? [];
    this.held = null;
    for (const run of held) this.runs.set(runKey(run), run);
    this.changed();
  }

  /** A snapshot will not come (the request failed): stop holding changes back. */
  abandonSnapshot(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const run of held) this.runs.set(runKey(run), run);
    if (held.length > 0) this.changed();
  }

  /** Update the host list alone (e.g. after a run appeared on a host we did not know). */
  applyHosts(hosts: HostInfo[]): void {
    this.hostInfo.clear();
    for (const host of hosts) this.hostInfo.set(host.alias, host);
    this.changed();
  }

  /** A `run/changed` (or a fresher answer about one run). Returns true for a host not seen before. */
  applyRun(run: RunInfo): boolean {
    if (this.held) {
      this.held.push(run);
      return false;
    }
    const newHost = !this.hostInfo.has(run.host) && !this.hasRunsOn(run.host);
    const before = this.runs.get(runKey(run));
    this.runs.set(runKey(run), run);
    this.changed(before !== undefined && sameStanding(before, run) ? runKey(run) : undefined);
    return newHost;
  }

  /** A `run/changed` with `removed`: the run is gone from the registry (`rtrain rm`). */
  removeRun(host: string, runId: string): void {
    if (this.held) {
      this.held = this.held.filter((run) => run.host !== host || run.runId !== runId);
    }
    if (this.runs.delete(runKey({ host, runId }))) this.changed();
  }

  clear(): void {
    this.hostInfo.clear();
    this.runs.clear();
    this.held = null;
    this.changed();
  }

  /** Hosts the daemon knows plus any that only appear in runs, `local` last, the rest by name. */
  hosts(): HostInfo[] {
    const aliases = new Set([...this.hostInfo.keys(), ...[...this.runs.values()].map((r) => r.host)]);
    return [...aliases]
      .sort((a, b) => Number(a === "local") - Number(b === "local") || a.localeCompare(b))
      .map((alias) => this.hostInfo.get(alias) ?? { alias, connection: "disconnected" });
  }

  host(alias: string): HostInfo | undefined {
    return this.hosts().find((h) => h.alias === alias);
  }

  /** A host's runs, newest first. */
  runsOf(alias: string): RunInfo[] {
    return [...this.runs.values()].filter((r) => r.host === alias).sort(newestFirst);
  }

  /** The sweeps the runs belong to (`rtrain sweep`), by name. */
  sweeps(): string[] {
    const names = new Set([...this.runs.values()].flatMap((r) => (r.sweep ? [r.sweep] : [])));
    return [...names].sort((a, b) => a.localeCompare(b));
  }

  /** A sweep's runs, in their order in it (NAME-1, NAME-2, ...). */
  runsOfSweep(name: string): RunInfo[] {
    const index = (run: RunInfo): number => Number(run.runId.slice(run.runId.lastIndexOf("-") + 1)) || 0;
    return [...this.runs.values()].filter((r) => r.sweep === name).sort((a, b) => index(a) - index(b));
  }

  run(host: string, runId: string): RunInfo | undefined {
    return this.runs.get(runKey({ host, runId }));
  }

  allRuns(): RunInfo[] {
    return [...this.runs.values()].sort(newestFirst);
  }

  runningCount(alias?: string): number {
    return [...this.runs.values()].filter((r) => r.state === "running" && (alias === undefined || r.host === alias))
      .length;
  }

  private hasRunsOn(alias: string): boolean {
    return [...this.runs.values()].some((r) => r.host === alias);
  }

  private changed(only?: RunKey): void {
    for (const listener of [...this.listeners]) listener(only);
  }
}

/** Whether two records of a run differ at most in what its log said. */
function sameStanding(a: RunInfo, b: RunInfo): boolean {
  const { progress: _p1, latest: _l1, gpus: _g1, lastSeen: _s1, ...restA } = a;
  const { progress: _p2, latest: _l2, gpus: _g2, lastSeen: _s2, ...restB } = b;
  return JSON.stringify(restA) === JSON.stringify(restB);
}

function startTime(run: RunInfo): number {
  return run.createdAt ?? run.startedAt ?? 0;
}

function newestFirst(a: RunInfo, b: RunInfo): number {
  return startTime(b) - startTime(a) || b.runId.localeCompare(a.runId);
}
