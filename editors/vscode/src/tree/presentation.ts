// How a host or a run reads in the tree: text, icon and colour per state. No VS Code here,
// so the words are unit-tested; runsTreeProvider turns them into TreeItems.

import { numberText, progressText } from "../panel/panelData";
import type { GuardState, HostInfo, RunInfo } from "../protocol/generated";

export interface Look {
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id, and a theme colour id for it. */
  icon: string;
  color?: string;
  /** `viewItem` for menus: rtrainHost, rtrainRun.<state>. */
  contextValue: string;
}

const RUN_ICONS: Record<RunInfo["state"], { icon: string; color?: string }> = {
  queued: { icon: "watch", color: "charts.purple" },
  running: { icon: "sync~spin", color: "charts.blue" },
  completed: { icon: "pass", color: "testing.iconPassed" },
  failed: { icon: "error", color: "testing.iconFailed" },
  stopped: { icon: "debug-stop", color: "charts.yellow" },
  lost: { icon: "question", color: "charts.orange" },
  unknown: { icon: "circle-slash", color: "disabledForeground" },
};

const HOST_ICONS: Record<HostInfo["connection"], { icon: string; color?: string }> = {
  connected: { icon: "vm-active", color: "charts.green" },
  connecting: { icon: "loading~spin" },
  disconnected: { icon: "vm-outline" },
  failed: { icon: "vm-outline", color: "errorForeground" },
};

/** A cost in the rate's own unit: to the cent, or to four places while under one. */
export function costText(cost: number): string {
  return cost > 0 && cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2);
}

/** Seconds a running run's log may be still before it says so (client/run_state_text.py). */
export const SILENT_AFTER = 30;

/** "last output 45s ago" for a running run whose log has been still SILENT_AFTER s or more. */
export function silenceText(run: RunInfo, now: Date = new Date()): string {
  if (run.state !== "running" || typeof run.lastOutputAt !== "number") return "";
  const quiet = now.getTime() / 1000 - run.lastOutputAt;
  return quiet >= SILENT_AFTER ? `last output ${durationText(quiet)} ago` : "";
}

/** "failed (exit 3)", "stopped", "running (stalled 12m)", ... as the CLI says it. */
export function stateText(run: RunInfo, now: Date = new Date()): string {
  // A run's limits say their part: how long it has been stalled, which one stopped it.
  if (run.state === "running" && typeof run.stalledSince === "number")
    return `running (stalled ${durationText(now.getTime() / 1000 - run.stalledSince)})`;
  const silence = silenceText(run, now);
  if (silence) return `running (${silence})`;
  if (run.state === "stopped" && run.stoppedBy && run.reason) return `stopped (${run.reason})`;
  // A scheduler's own word where it says more: "failed (TIMEOUT)", "stopped (CANCELLED)".
  const ended = run.state === "failed" || run.state === "stopped" || run.state === "lost";
  if (ended && run.schedulerState) return `${run.state} (${run.schedulerState})`;
  if (run.state === "failed") {
    if (run.reason === "setup" || run.reason === "program not found")
      return `failed (${run.reason}, exit ${run.exitCode})`;
    if (run.exitCode !== undefined && run.exitCode !== null) {
      // Why, as the far side read it: the rank that failed first, the signal, the last
      // exception line or last line of the log.
      if (run.reason) return `failed (exit ${run.exitCode}, ${run.reason})`;
      return `failed (exit ${run.exitCode})`;
    }
    if (run.signal !== undefined && run.signal !== null) return `failed (signal ${run.signal})`;
  }
  if (run.state === "queued" && run.reason) return `queued (${run.reason})`;
  return run.state;
}

/** Local time: "14:03:27" today, "2026-05-01 14:03" otherwise. */
export function formatTime(epochSeconds: number | null | undefined, now: Date = new Date()): string {
  if (epochSeconds === undefined || epochSeconds === null) return "";
  const t = new Date(epochSeconds * 1000);
  const two = (n: number): string => String(n).padStart(2, "0");
  const day = `${t.getFullYear()}-${two(t.getMonth() + 1)}-${two(t.getDate())}`;
  const today = `${now.getFullYear()}-${two(now.getMonth() + 1)}-${two(now.getDate())}`;
  return day === today
    ? `${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}`
    : `${day} ${two(t.getHours())}:${two(t.getMinutes())}`;
}

/** "45% · loss 0.4123" for a run whose log shows progress or a loss; "" otherwise. */
export function watchText(run: RunInfo): string {
  const parts: string[] = [];
  if (run.progress?.total) parts.push(`${Number((run.progress.percent ?? 0).toFixed(1))}%`);
  const latest = run.latest ?? {};
  const loss = ["loss", "train_loss", "train/loss", "eval_loss"].find((name) => name in latest) ??
    Object.keys(latest).find((name) => name.includes("loss"));
  if (loss !== undefined) parts.push(`${loss} ${numberText(latest[loss])}`);
  return parts.join(" · ");
}

/** "then: done: fetched ...; pod terminated" for a run started with --then-fetch or
 * --then-terminate, as the CLI says it; "" for any other run. */
export function afterText(run: RunInfo): string {
  if (!run.after) return "";
  const stage = run.after.stage ?? "waiting";
  return run.after.detail ? `then: ${stage}: ${run.after.detail}` : `then: ${stage}`;
}

export function runLook(run: RunInfo, now?: Date): Look {
  const started = formatTime(run.startedAt ?? run.createdAt, now);
  const watched = run.state === "running" ? watchText(run) : "";
  const said = stateText(run, now);
  let state = watched ? `${said} · ${watched}` : said;
  // A restarted or retried run says which attempt this is; the tooltip says why it began.
  const attempts = run.attempts ?? [];
  const latest = attempts.length > 1 ? attempts[attempts.length - 1] : undefined;
  if (latest) state += ` · attempt ${latest.number}`;
  // Once the run has ended, what follows it is the news: fetching, terminating, failed.
  const stage = run.after?.stage ?? "waiting";
  if (run.after && run.state !== "running" && run.state !== "queued") state += ` · then ${stage}`;
  const where = run.nodes?.length ? run.nodes.map((node) => node.host).join(",") : run.host;
  const lines = [`${run.runId} on ${where}: ${state}`];
  if (latest?.cause) lines.push(`attempt ${latest.number}: ${latest.cause}`);
  const after = afterText(run);
  if (after) lines.push(after);
  if (run.progress) lines.push(progressText(run.progress));
  if (started) lines.push(`started ${started}`);
  if (run.reason) lines.push(run.reason);
  if (typeof run.cost === "number")
    lines.push(`cost ${costText(run.cost)} (${durationText(run.billedSeconds ?? 0)} at ${run.pricePerHour}/h)`);
  if (run.remoteDir) lines.push(run.remoteDir);
  // A stalled run still runs, but asks to be looked at.
  const stalled = run.state === "running" && typeof run.stalledSince === "number";
  return {
    label: run.runId,
    description: started ? `${state} · ${started}` : state,
    tooltip: lines.join("\n"),
    ...(stalled ? { icon: "warning", color: "charts.orange" } : RUN_ICONS[run.state]),
    contextValue: `rtrainRun.${run.state}`,
  };
}

/** "45s", "12m 34s", "1h 5m": the two largest units, as the CLI says it. */
export function durationText(seconds: number): string {
  let whole = Math.max(0, Math.floor(seconds));
  const parts: string[] = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    if (whole >= size || (unit === "s" && parts.length === 0)) {
      parts.push(`${Math.floor(whole / size)}${unit}`);
      whole %= size;
    }
    if (parts.length === 2) break;
  }
  if (parts.length === 2 && parts[1].startsWith("0")) parts.pop();
  return parts.join(" ");
}

/** The host's guard in a few words for the host's line ("guard: acts in 18m"), and in
 * lines for its tooltip, as `rtrain guard HOST` says it. */
export function guardText(guard: GuardState, nowSeconds: number): { short: string; lines: string[] } {
  if (!guard.armed) {
    const lines = ["guard: disarmed"];
    if (guard.lastFired) lines.push(`last fired ${formatTime(guard.lastFired.at)} (exit ${guard.lastFired.exitCode})`);
    return { short: "guard off", lines };
  }
  const also = [guard.ignoreSessions ? "ssh sessions ignored" : "", guard.stalledIdle ? "stalled runs idle" : ""].filter(Boolean);
  const lines = [
    `guard: armed, after ${durationText(guard.idleSeconds ?? 0)} idle it runs \`${guard.command ?? ""}\`` +
      (also.length ? ` (${also.join(", ")})` : ""),
  ];
  let short = "guard armed";
  if (guard.busy) {
    short = "guard: busy";
    lines.push(`busy: ${guard.busy}`);
  } else if (guard.idleSince !== undefined && guard.idleSince !== null) {
    const idle = `idle for ${durationText(nowSeconds - guard.idleSince)}`;
    if (guard.actsAt === undefined || guard.actsAt === null) {
      short = "guard: fired";
      lines.push(`${idle}; it ran the command for this idle period already`);
    } else {
      const left = guard.actsAt - nowSeconds;
      short = left > 0 ? `guard: acts in ${durationText(left)}` : "guard: acts now";
      lines.push(left > 0 ? `${idle}; acts in ${durationText(left)}` : `${idle}; acts at its next look`);
    }
  }
  if (guard.lastFired) lines.push(`last fired ${formatTime(guard.lastFired.at)} (exit ${guard.lastFired.exitCode})`);
  return { short, lines };
}

export function hostLook(host: HostInfo, running: number, nowSeconds: number = Date.now() / 1000): Look {
  const parts: string[] = [host.connection];
  if (host.transport) parts.push(host.transport);
  if (running > 0) parts.push(`${running} running`);
  const lines = [`${host.alias}: ${parts.join(", ")}`];
  if (host.lastError) lines.push(host.lastError);
  if (host.guard) {
    const guard = guardText(host.guard, nowSeconds);
    parts.push(guard.short);
    lines.push(...guard.lines);
  }
  if (typeof host.cost === "number") {
    const idle = `${costText(host.idleCost ?? 0)} idle (${durationText(host.idleSeconds ?? 0)})`;
    parts.push(`cost ${costText(host.cost)}`);
    lines.push(`cost ${costText(host.cost)} while up ${durationText(host.upSeconds ?? 0)}, ${idle}`);
  }
  return {
    label: host.alias,
    description: parts.join(" · "),
    tooltip: lines.join("\n"),
    ...HOST_ICONS[host.connection],
    contextValue: "rtrainHost",
  };
}

/** 1536 -> "1.5 KB". */
export function formatBytes(bytes: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
