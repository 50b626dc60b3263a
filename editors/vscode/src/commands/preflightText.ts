// A preflight verdict as text: the daemon's findings, the way `rtrain preflight` prints them.

import type { PreflightResult } from "../protocol/generated";
import { formatBytes } from "../tree/presentation";

const FINDING_MARKS: Record<string, string> = { problem: "✗ ", warning: "! ", info: "· " };

/** One line per finding of the daemon's, marked by level as the CLI marks them. */
export function findingLines(result: PreflightResult): string[] {
  const findings = result.findings ?? [];
  if (findings.length === 0) return result.reasons.map((reason) => `  ${reason}`);
  return findings.map((f) => `  ${FINDING_MARKS[f.level ?? "ok"] ?? ""}${f.topic}: ${f.text}`);
}

export function preflightSummary(result: PreflightResult): string {
  const parts: string[] = [];
  if (result.transport) parts.push(result.transport);
  if (result.pythonVersion) parts.push(`python ${result.pythonVersion}`);
  const gpus = result.gpus ?? [];
  parts.push(gpus.length === 0 ? "no GPU" : `${gpus.length} GPU${gpus.length === 1 ? "" : "s"} (${gpus.map((g) => g.name).join(", ")})`);
  if (result.gpusFree !== undefined && result.gpusFree !== null && gpus.length > 0) parts.push(`${result.gpusFree} free now`);
  if (result.torchVersion) parts.push(`torch ${result.torchVersion}${result.cudaVersion ? ` (CUDA ${result.cudaVersion})` : " (CPU only)"}`);
  const warnings = (result.findings ?? []).filter((f) => f.level === "warning").length;
  if (warnings > 0) parts.push(`${warnings} warning${warnings === 1 ? "" : "s"}`);
  if (result.freeDiskBytes !== undefined && result.freeDiskBytes !== null) parts.push(`${formatBytes(result.freeDiskBytes)} free`);
  return parts.join(", ");
}

