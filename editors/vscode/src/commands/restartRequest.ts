// The request Restart and Restart with Code… send, and the sentence their answer becomes: no
// vscode API here, so the unit tests run them against a real daemon.

import type { RestartParams, RestartResult, RunInfo } from "../protocol/generated";

/** The states a run may be restarted from: it has ended. */
export const RESTARTABLE: ReadonlySet<RunInfo["state"]> = new Set(["completed", "failed", "stopped", "lost"]);

/** The `run/restart` request for `run`; `codeDir` (an absolute local folder) ships its changed files. */
export function restartRequest(run: Pick<RunInfo, "host" | "runId" | "workdir">, codeDir?: string): RestartParams {
  return {
    host: run.host,
    runId: run.runId,
    ...(run.workdir ? { workdir: run.workdir } : {}),
    ...(codeDir ? { code: codeDir } : {}),
  };
}

/** What the user is told once the new attempt is launched. */
export function restartSummary(result: RestartResult, withCode: boolean): string {
  const head = `restarted ${result.run.runId} on ${result.run.host} (attempt ${result.attempt})`;
  const shipped = result.codeShipped ?? [];
  const differs = result.codeDiffers ?? [];
  if (withCode) {
    if (shipped.length === 0) return `${head}; the code was as the run had it, nothing shipped`;
    return `${head}; shipped ${count(shipped.length, "changed file")}: ${listed(shipped)}`;
  }
  if (differs.length === 0) return head;
  return `${head} with the code it had; your local code differs in ${count(differs.length, "file")} (${listed(differs)}): Restart with Code… ships them`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, 5).join(", ");
  return paths.length > 5 ? `${shown}, … (${paths.length - 5} more)` : shown;
}
