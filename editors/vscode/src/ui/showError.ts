// Every failure reaches the user as one sentence with its kind; details go to the log channel.

import * as vscode from "vscode";
import { describeError, RpcError } from "../protocol/rpcError";
import { hostNeedingLogin, offerLogin } from "./loginOffer";

export function showError(error: unknown, log?: vscode.OutputChannel): void {
  if (error instanceof RpcError && error.cancelled) return;
  const line = describeError(error);
  log?.appendLine(`error: ${line}`);
  const host = hostNeedingLogin(error);
  if (host) {
    void offerLogin(host, line);
    return;
  }
  void vscode.window.showErrorMessage(`rtrain: ${line}`);
}
