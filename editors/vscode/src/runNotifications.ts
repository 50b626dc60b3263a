// A notification when a run ends, fails, stalls, or a limit or a guard acts: fed by the runs
// model's changes (runNotices.ts decides what deserves a word), with buttons to look closer.

import * as vscode from "vscode";
import { type Notice, RunNotices } from "./runNotices";
import type { RunKey, RunsModel } from "./tree/runsModel";

const SHOW = "Show Run";
const TAIL = "Tail Log";

export function runNotifications(model: RunsModel): vscode.Disposable {
  const notices = new RunNotices();
  // What the model holds now is learnt, not told: only changes from here on get a word.
  notices.runs(model.allRuns());
  notices.hosts(model.hosts());
  const stop = model.onDidChange((only?: RunKey) => {
    if (only !== undefined) return; // only what a log said changed: no end, no stall
    for (const notice of [...notices.runs(model.allRuns()), ...notices.hosts(model.hosts())]) show(notice);
  });
  return { dispose: stop };
}

function show(notice: Notice): void {
  const buttons = notice.run ? [SHOW, TAIL] : [];
  const message = `rtrain: ${notice.message}`;
  const shown =
    notice.level === "error"
      ? vscode.window.showErrorMessage(message, ...buttons)
      : notice.level === "warning"
        ? vscode.window.showWarningMessage(message, ...buttons)
        : vscode.window.showInformationMessage(message, ...buttons);
  void shown.then((answer) => {
    if (!answer || !notice.run) return;
    const node = { kind: "run", ...notice.run };
    void vscode.commands.executeCommand(answer === SHOW ? "rtrain.showRun" : "rtrain.tail", node);
  });
}
