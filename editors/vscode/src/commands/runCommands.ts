// Status, Stop and Fetch on one run. Each shows what the daemon actually answered.

import * as os from "node:os";
import * as vscode from "vscode";
import type { FetchResult, RunInfo } from "../protocol/generated";
import { formatBytes, formatTime, stateText } from "../tree/presentation";
import type { CommandContext } from "./context";
import { pickRun } from "./pickTarget";
import { progressReporter } from "./progress";

function runRef(run: RunInfo): { host: string; runId: string; workdir?: string } {
  return { host: run.host, runId: run.runId, ...(run.workdir ? { workdir: run.workdir } : {}) };
}

export async function showStatus(ctx: CommandContext, arg: unknown): Promise<void> {
  const picked = await pickRun(ctx, arg, "show");
  if (!picked) return;
  const { run } = await ctx.connection.request("run/status", runRef(picked));
  ctx.model.applyRun(run);
  const parts = [`${run.runId} on ${run.host}: ${stateText(run)}`];
  if (run.startedAt) parts.push(`started ${formatTime(run.startedAt)}`);
  if (run.lastSeen) parts.push(`checked ${formatTime(run.lastSeen)}`);
  if (run.reason) parts.push(run.reason);
  ctx.log.appendLine(`status: ${JSON.stringify(run)}`);
  void vscode.window.showInformationMessage(`rtrain: ${parts.join("; ")}.`);
}

export async function stopRun(ctx: CommandContext, arg: unknown): Promise<void> {
  const picked = await pickRun(ctx, arg, "stop", (r) => ["queued", "running", "unknown"].includes(r.state));
  if (!picked) return;
  const confirm = "Stop";
  const answer = await vscode.window.showWarningMessage(
    `Stop run ${picked.runId} on ${picked.host}?`,
    { modal: true, detail: "The trainer and every process it started are ended; files in the run directory stay." },
    confirm,
  );
  if (answer !== confirm) return;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Stopping ${picked.runId}…` },
    () => ctx.connection.request("run/stop", runRef(picked)),
  );
  ctx.model.applyRun(result.run);
  const message =
    result.outcome === "stopped"
      ? `stopped ${picked.runId} on ${picked.host}` +
        (result.killed.length > 0 ? ` (ended ${result.killed.length} process${result.killed.length === 1 ? "" : "es"})` : "")
      : `${picked.runId} was not running; it is ${stateText(result.run)}`;
  ctx.log.appendLine(`stop: ${JSON.stringify(result)}`);
  void vscode.window.showInformationMessage(`rtrain: ${message}.`);
}

export async function fetchFiles(ctx: CommandContext, arg: unknown): Promise<void> {
  const picked = await pickRun(ctx, arg, "fetch from");
  if (!picked) return;
  const path = await vscode.window.showInputBox({
    title: `Fetch from ${picked.runId}`,
    prompt: "A file or folder inside the run directory",
    value: "lora_model",
    validateInput: (value) => (value.trim() ? undefined : "Name a path inside the run directory"),
  });
  if (!path) return;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(os.homedir());
  const dest = await vscode.window.showOpenDialog({
    title: "Fetch into this folder",
    openLabel: "Fetch Here",
    canSelectFiles: false,
    canSelectFolders: true,
    canSelectMany: false,
    defaultUri: folder,
  });
  if (!dest?.[0]) return;
  const token = `fetch-${picked.host}-${picked.runId}-${Date.now()}`;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Fetching ${path} from ${picked.runId}`, cancellable: true },
    (progress, cancel) =>
      progressReporter(ctx.connection, token, progress, cancel, (signal) =>
        ctx.connection.request(
          "run/fetch",
          { ...runRef(picked), path: path.trim(), dest: dest[0].fsPath, progressToken: token },
          { signal },
        ),
      ),
  );
  reportFetch(ctx, result, dest[0]);
}

function reportFetch(ctx: CommandContext, result: FetchResult, dest: vscode.Uri): void {
  const unverified = result.files.filter((f) => !f.verified);
  for (const file of result.files) {
    ctx.log.appendLine(`fetched ${file.remotePath} -> ${file.localPath} (${file.size} B, sha256 ${file.sha256}${file.verified ? ", verified" : ", NOT verified"})`);
  }
  const size = formatBytes(result.totalBytes);
  const count = `${result.files.length} file${result.files.length === 1 ? "" : "s"}`;
  if (unverified.length > 0) {
    void vscode.window.showWarningMessage(
      `rtrain: fetched ${count} (${size}) into ${dest.fsPath}; ${unverified.length} did not verify: ${unverified.map((f) => f.remotePath).join(", ")}.`,
    );
    return;
  }
  void vscode.window.showInformationMessage(
    `rtrain: fetched ${count} (${size}) into ${dest.fsPath}; all verified by sha256.`,
  );
}
