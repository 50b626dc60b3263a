// What deserves a word when runs change: a run's end (completed, failed, stopped, lost), a run
// that stalled, a limit or a guard that acted. No VS Code here, so the rules are unit-tested;
// runNotifications.ts shows the words.

import type { HostInfo, RunInfo } from "./protocol/generated";
import { stateText } from "./tree/presentation";

export type NoticeLevel = "info" | "warning" | "error";

export interface Notice {
  level: NoticeLevel;
  message: string;
  /** The run it is about (for its buttons); none for a host's guard. */
  run?: { host: string; runId: string };
}

const ENDED = new Set<RunInfo["state"]>(["completed", "failed", "stopped", "lost"]);

interface SeenRun {
  state: RunInfo["state"];
  attempt: number;
  stalled: boolean;
  terminatedAt?: number;
}

function seenRun(run: RunInfo): SeenRun {
  return {
    state: run.state,
    attempt: run.attempts?.length ?? 0,
    stalled: run.stalledSince != null,
    terminatedAt: run.after?.terminatedAt ?? undefined,
  };
}

/** Remembers what it was shown last; `runs`/`hosts` return what changed since in words. A run
 * or a host seen for the first time is only learnt: no word for what happened before. */
export class RunNotices {
  private readonly runsSeen = new Map<string, SeenRun>();
  private readonly guardsFired = new Map<string, number>();

  runs(runs: RunInfo[]): Notice[] {
    const notices: Notice[] = [];
    for (const run of runs) {
      const key = `${run.host}/${run.runId}`;
      const before = this.runsSeen.get(key);
      const now = seenRun(run);
      this.runsSeen.set(key, now);
      if (before) notices.push(...noticesFor(before, now, run));
    }
    return notices;
  }

  hosts(hosts: HostInfo[]): Notice[] {
    const notices: Notice[] = [];
    for (const host of hosts) {
      const fired = host.guard?.lastFired?.at;
      if (fired == null) continue;
      const before = this.guardsFired.get(host.alias);
      this.guardsFired.set(host.alias, fired);
      if (before !== undefined && fired > before) {
        const code = host.guard?.lastFired?.exitCode;
        notices.push({
          level: code ? "error" : "warning",
          message:
            `${host.alias}'s guard ran its command (${host.guard?.command ?? "terminate"})` +
            (code ? `, which exited ${code}` : "") +
            ": the host was idle.",
        });
      }
    }
    return notices;
  }
}

function noticesFor(before: SeenRun, now: SeenRun, run: RunInfo): Notice[] {
  const about = { host: run.host, runId: run.runId };
  const name = `${run.runId} on ${run.host}`;
  const notices: Notice[] = [];
  const newEnd = ENDED.has(now.state) && (!ENDED.has(before.state) || before.attempt !== now.attempt);
  if (newEnd) {
    if (run.state === "completed") {
      notices.push({ level: "info", message: `${name} completed.`, run: about });
    } else if (run.state === "stopped" && run.stoppedBy) {
      notices.push({ level: "warning", message: `${name} was stopped by its limit: ${stateText(run)}.`, run: about });
    } else if (run.state === "stopped") {
      notices.push({ level: "info", message: `${name} was stopped.`, run: about });
    } else {
      notices.push({ level: "error", message: `${name} ${stateText(run)}.`, run: about });
    }
  } else if (now.state === "running" && now.stalled && !before.stalled) {
    notices.push({
      level: "warning",
      message: `${name} has stalled: its log is still and its GPUs idle.`,
      run: about,
    });
  }
  if (now.terminatedAt !== undefined && before.terminatedAt === undefined) {
    notices.push({ level: "info", message: `After ${name}: ${run.after?.detail ?? `${run.host} terminated`}.`, run: about });
  }
  return notices;
}
