// The status-bar item: how many runs are running; a click shows the rtrain view.

import * as vscode from "vscode";
import type { DaemonConnection } from "./daemon/daemonConnection";
import type { RunsModel } from "./tree/runsModel";

export function createStatusBar(connection: DaemonConnection, model: RunsModel): vscode.Disposable {
  const item = vscode.window.createStatusBarItem("rtrain.running", vscode.StatusBarAlignment.Left, 10);
  item.name = "rtrain runs";
  item.command = "workbench.view.extension.rtrain";
  const update = (): void => {
    const state = connection.state;
    if (state.status === "connected") {
      const running = model.runningCount();
      item.text = `$(pulse) ${running} running`;
      item.tooltip = `rtrain: ${running} run${running === 1 ? "" : "s"} running. Click to show them.`;
    } else if (state.status === "connecting") {
      item.text = "$(loading~spin) rtrain";
      item.tooltip = "rtrain: connecting to the daemon…";
    } else {
      item.text = "$(debug-disconnect) rtrain";
      item.tooltip = `rtrain: ${state.reason}`;
    }
  };
  const undo = [model.onDidChange(update), connection.onStateChange(update)];
  update();
  item.show();
  return new vscode.Disposable(() => {
    for (const u of undo) u();
    item.dispose();
  });
}
