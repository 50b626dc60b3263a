// A host that asks for a password or a second factor: offer `rtrain login HOST` in a terminal,
// where the person answers ssh's questions once; the daemon then uses that connection.

import * as vscode from "vscode";
import { RpcError } from "../protocol/rpcError";

/** The host a `login_required` error names, or undefined for any other error. */
export function hostNeedingLogin(error: unknown): string | undefined {
  if (!(error instanceof RpcError) || error.kind !== "login_required") return undefined;
  const host = error.data?.host;
  return typeof host === "string" && host ? host : undefined;
}

/** Show the error's sentence with a "Log in" button that opens the login in a terminal. */
export async function offerLogin(host: string, line: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(`rtrain: ${line}`, "Log in");
  if (choice !== "Log in") return;
  const config = vscode.workspace.getConfiguration("rtrain");
  const executable = config.get<string>("executable")?.trim() || "rtrain";
  const socket = config.get<string>("socketPath")?.trim();
  // The program itself, no shell: nothing in the host's name is read as shell syntax.
  const terminal = vscode.window.createTerminal({
    name: `rtrain login ${host}`,
    shellPath: executable,
    shellArgs: ["login", host],
    env: socket ? { RTRAIN_SOCKET: socket } : undefined,
  });
  terminal.show();
}
