// Preflight a host, and start a run on one (pick config, dataset, host).

import * as vscode from "vscode";
import type { CommandContext } from "./context";
import type { LogTails } from "./logTails";
import { askHost, pickHost } from "./pickTarget";
import { findingLines, preflightSummary } from "./preflightText";
import { progressReporter } from "./progress";

export async function preflightHost(ctx: CommandContext, arg: unknown): Promise<void> {
  const host = await pickHost(ctx, arg, "check");
  if (!host) return;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Checking ${host}…` },
    () => ctx.connection.request("host/preflight", { host }),
  );
  // The same findings, in the same words, as `rtrain preflight` prints.
  ctx.log.appendLine(result.ok ? `${host} is ready to train.` : `✗ ${host} cannot train`);
  for (const line of findingLines(result)) ctx.log.appendLine(line);
  const details = "Show Findings";
  const shown = result.ok
    ? vscode.window.showInformationMessage(`rtrain: ${host} can train: ${preflightSummary(result)}.`, details)
    : vscode.window.showWarningMessage(`rtrain: ${host} is not ready: ${result.reasons.join("; ")}.`, details);
  void shown.then((answer) => {
    if (answer === details) ctx.log.show(true);
  });
}

export async function startRun(ctx: CommandContext, tails: LogTails, arg: unknown): Promise<void> {
  const config = await pickFile("Training config (YAML)", "**/*.{yaml,yml}", { YAML: ["yaml", "yml"] }, false);
  if (!config) return;
  const dataset = await pickFile("Dataset", "**/*.{jsonl,json,csv,parquet,txt}", { Data: ["jsonl", "json", "csv", "parquet", "txt"] }, true);
  if (dataset === undefined) return;
  const host = (arg ? await pickHost(ctx, arg, "train on") : undefined) ?? (await askHost(ctx, "train on"));
  if (!host) return;
  const token = `start-${host}-${Date.now()}`;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Starting a run on ${host}`, cancellable: true },
    (progress, cancel) =>
      progressReporter(ctx.connection, token, progress, cancel, (signal) =>
        ctx.connection.request(
          "run/start",
          { host, config: config.fsPath, ...(dataset ? { dataset: dataset.fsPath } : {}), progressToken: token },
          { signal },
        ),
      ),
  );
  ctx.model.applyRun(result.run);
  ctx.log.appendLine(`started: ${JSON.stringify(result)}`);
  const tail = "Tail Log";
  if (result.run.host.startsWith("@")) {
    // Queued in its pool: no host holds it yet, so there is no log to tail.
    void vscode.window.showInformationMessage(`rtrain: queued ${result.run.runId} in ${host}: ${result.run.reason ?? ""}`);
    return;
  }
  const where = result.placement ? ` (${result.placement})` : "";
  const answer = await vscode.window.showInformationMessage(`rtrain: started ${result.run.runId} on ${result.run.host}${where}.`, tail);
  if (answer === tail) await tails.tail(result.run);
}

/** A workspace file matching `glob`, or one browsed to; null when `optional` and skipped. */
async function pickFile(
  title: string,
  glob: string,
  filters: Record<string, string[]>,
  optional: boolean,
): Promise<vscode.Uri | null | undefined> {
  const found = await vscode.workspace.findFiles(glob, "**/{node_modules,.git,.venv}/**", 200);
  const browse = "Browse…";
  const none = "No dataset";
  const items: Array<vscode.QuickPickItem & { uri?: vscode.Uri }> = found
    .sort((a, b) => a.fsPath.localeCompare(b.fsPath))
    .map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri }));
  items.push({ label: browse });
  if (optional) items.unshift({ label: none });
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: title });
  if (!picked) return undefined;
  if (picked.label === none) return null;
  if (picked.uri) return picked.uri;
  const chosen = await vscode.window.showOpenDialog({ title, canSelectMany: false, filters });
  return chosen?.[0];
}
