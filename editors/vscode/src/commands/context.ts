// What every command needs: the daemon, the model behind the tree, the tree view, the log.

import type * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import type { RunsModel } from "../tree/runsModel";
import type { RunsSync } from "../tree/runsSync";
import type { TreeNode } from "../tree/runsTreeProvider";

export interface CommandContext {
  connection: DaemonConnection;
  model: RunsModel;
  sync: RunsSync;
  view: vscode.TreeView<TreeNode>;
  log: vscode.OutputChannel;
  /** Environment of the daemon (for the log path when it cannot be asked). */
  env(): NodeJS.ProcessEnv;
  /** Where the extension's files are (the run panel's page and chart library). */
  extensionUri: vscode.Uri;
}
