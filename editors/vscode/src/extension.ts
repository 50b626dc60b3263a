// Wiring: one daemon connection per window, the model and view it feeds, the status bar
// and the commands.

import * as vscode from "vscode";
import { registerCommands } from "./commands/registerCommands";
import { DaemonConnection } from "./daemon/daemonConnection";
import { socketPath } from "./daemon/locations";
import { runNotifications } from "./runNotifications";
import { createStatusBar } from "./statusBar";
import { RunsModel } from "./tree/runsModel";
import { RunsSync } from "./tree/runsSync";
import { RunsTreeProvider } from "./tree/runsTreeProvider";

function settings(): { executable: string; socketPath: string } {
  const config = vscode.workspace.getConfiguration("rtrain");
  return {
    executable: config.get<string>("executable")?.trim() || "rtrain",
    socketPath: config.get<string>("socketPath")?.trim() || "",
  };
}

/** The environment `rtrain daemon start` runs in: ours, plus the socket override if set. */
function daemonEnv(): NodeJS.ProcessEnv {
  const override = settings().socketPath;
  return override ? { ...process.env, RTRAIN_SOCKET: override } : { ...process.env };
}

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("rtrain");
  const connection = new DaemonConnection({
    clientName: "rtrain-vscode",
    clientVersion: String(context.extension.packageJSON.version ?? "0"),
    socketPath: () => socketPath(process.env, settings().socketPath),
    executable: () => settings().executable,
    env: daemonEnv,
    log: (line) => log.appendLine(line),
  });
  const model = new RunsModel();
  const sync = new RunsSync(connection, model, (line) => log.appendLine(line));
  const tree = new RunsTreeProvider(model);
  const view = vscode.window.createTreeView("rtrain.runs", {
    treeDataProvider: tree,
    showCollapseAll: true,
    // Several runs selected together show their curves overlaid (rtrain.showRun).
    canSelectMany: true,
  });

  const showState = (): void => {
    const state = connection.state;
    void vscode.commands.executeCommand("setContext", "rtrain.daemon", state.status);
    view.message = state.status === "disconnected" && state.reason !== "Not connected yet" ? state.reason : undefined;
  };
  const stopShowingState = connection.onStateChange(showState);
  showState();

  context.subscriptions.push(
    log,
    tree,
    view,
    createStatusBar(connection, model),
    runNotifications(model),
    ...registerCommands({ connection, model, sync, view, log, env: daemonEnv, extensionUri: context.extensionUri }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("rtrain.socketPath")) {
        connection.restart().catch((error) => log.appendLine(`reconnect failed: ${String(error)}`));
      }
    }),
    { dispose: () => (stopShowingState(), sync.dispose(), connection.dispose()) },
  );

  // Like the CLI: start the daemon when none answers.
  connection.connect(true).catch(() => undefined);
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
