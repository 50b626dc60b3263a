// Restart and Restart with Code…: an ended run's recorded command again in its own run
// directory, as a new attempt that resumes from the run's checkpoint. With code, the files of
// a picked folder that differ from what the run was shipped go into the run directory first
// (only those), and the message names them; without, the message says when the local code
// differs from the run's (as `rtrain restart` does).

import * as vscode from "vscode";
import type { CommandContext } from "./context";
import type { LogTails } from "./logTails";
import { pickRun } from "./pickTarget";
import { RESTARTABLE, restartRequest, restartSummary } from "./restartRequest";

export async function restartRun(ctx: CommandContext, tails: LogTails, arg: unknown, withCode: boolean): Promise<void> {
  const picked = await pickRun(ctx, arg, withCode ? "restart with code" : "restart", (r) => RESTARTABLE.has(r.state));
  if (!picked) return;
  let codeDir: string | undefined;
  if (withCode) {
    const folder = await vscode.window.showOpenDialog({
      title: `Restart ${picked.runId} with the code of this folder`,
      openLabel: "Ship Changes and Restart",
      canSelectFiles: false,
      canSelectFolders: true,
      canSelectMany: false,
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    if (!folder?.[0]) return;
    codeDir = folder[0].fsPath;
  }
  const title = withCode ? `Shipping changes and restarting ${picked.runId}…` : `Restarting ${picked.runId}…`;
  const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, () =>
    ctx.connection.request("run/restart", restartRequest(picked, codeDir)),
  );
  ctx.model.applyRun(result.run);
  ctx.log.appendLine(`restart: ${JSON.stringify(result)}`);
  void vscode.window.showInformationMessage(`rtrain: ${restartSummary(result, withCode)}.`);
  await tails.tail(result.run);
}
