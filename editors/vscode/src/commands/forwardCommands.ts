// Port forwards from a run's menu: open one the daemon holds for the run's host (the run's own
// first) in the browser, or forward a new port of the host (`forwards/open`). The context key
// `rtrain.hasForwards` follows the daemon's list (`forwards/list`, then `forwards/changed`).

import * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import type { ForwardInfo, RunInfo } from "../protocol/generated";
import { describeError } from "../protocol/rpcError";
import type { CommandContext } from "./context";
import { pickRun } from "./pickTarget";

export class ForwardsWatch implements vscode.Disposable {
  private forwards: ForwardInfo[] = [];
  private readonly undo: Array<() => void> = [];

  constructor(
    private readonly connection: DaemonConnection,
    private readonly log: (line: string) => void,
  ) {
    this.undo.push(
      connection.onStateChange((state) => {
        if (state.status === "connected") void this.reload();
        else if (state.status === "disconnected") this.set([]);
      }),
      connection.onNotification((notification) => {
        if (notification.method === "forwards/changed") this.set(notification.params.forwards);
      }),
    );
    if (connection.state.status === "connected") void this.reload();
  }

  /** The forwards to `host` a browser here can open (a reverse one's URL is the host's). */
  of(host: string): ForwardInfo[] {
    return this.forwards.filter((fwd) => fwd.host === host && !fwd.reverse);
  }

  set(forwards: ForwardInfo[]): void {
    this.forwards = forwards;
    void vscode.commands.executeCommand("setContext", "rtrain.hasForwards", forwards.length > 0);
  }

  async reload(): Promise<void> {
    try {
      this.set((await this.connection.request("forwards/list", {})).forwards);
    } catch (error) {
      this.log(`could not list forwards: ${describeError(error)}`);
    }
  }

  dispose(): void {
    for (const undo of this.undo) undo();
  }
}

export async function openForwardedPort(ctx: CommandContext, watch: ForwardsWatch, arg: unknown): Promise<void> {
  const run = await pickRun(ctx, arg, "open a forwarded port of");
  if (!run) return;
  await watch.reload();
  const forwards = watch
    .of(run.host)
    .sort((a, b) => Number(b.runId === run.runId) - Number(a.runId === run.runId) || a.localPort - b.localPort);
  if (forwards.length === 0) {
    const forward = "Forward a Port…";
    const answer = await vscode.window.showInformationMessage(`rtrain: no port of ${run.host} is forwarded.`, forward);
    if (answer === forward) await forwardPort(ctx, watch, run);
    return;
  }
  const picked =
    forwards.length === 1
      ? forwards[0]
      : (
          await vscode.window.showQuickPick(
            forwards.map((fwd) => ({
              label: `${fwd.host}:${fwd.remotePort}`,
              description: fwd.url + (fwd.runId ? ` · ${fwd.runId}` : ""),
              fwd,
            })),
            { placeHolder: "Forwarded port to open" },
          )
        )?.fwd;
  if (picked) await vscode.env.openExternal(vscode.Uri.parse(picked.url));
}

export async function forwardPortCommand(ctx: CommandContext, watch: ForwardsWatch, arg: unknown): Promise<void> {
  const run = await pickRun(ctx, arg, "forward a port of");
  if (run) await forwardPort(ctx, watch, run);
}

async function forwardPort(ctx: CommandContext, watch: ForwardsWatch, run: RunInfo): Promise<void> {
  const text = await vscode.window.showInputBox({
    title: `Forward a port of ${run.host}`,
    prompt: "The port on the host (its 127.0.0.1): 6006 for TensorBoard, 8888 for Jupyter",
    value: "6006",
    validateInput: (value) => (/^\d+$/.test(value.trim()) && +value >= 1 && +value <= 65535 ? undefined : "A port number from 1 to 65535"),
  });
  if (!text) return;
  const fwd = await ctx.connection.request("forwards/open", { host: run.host, remotePort: +text.trim(), runId: run.runId });
  watch.set([...watch.of(run.host).filter((f) => f.localPort !== fwd.localPort), fwd]);
  ctx.log.appendLine(`forward: ${JSON.stringify(fwd)}`);
  await vscode.env.openExternal(vscode.Uri.parse(fwd.url));
}

/** The host's one TensorBoard over this run too (`tensorboard/open`), opened in the browser. */
export async function openTensorBoard(ctx: CommandContext, watch: ForwardsWatch, arg: unknown): Promise<void> {
  const run = await pickRun(ctx, arg, "show in TensorBoard");
  if (!run) return;
  const board = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `rtrain: starting TensorBoard on ${run.host}…` },
    () => ctx.connection.request("tensorboard/open", { host: run.host, runId: run.runId }),
  );
  ctx.log.appendLine(`tensorboard: ${JSON.stringify(board)}`);
  await watch.reload();
  await vscode.env.openExternal(vscode.Uri.parse(board.url));
}
