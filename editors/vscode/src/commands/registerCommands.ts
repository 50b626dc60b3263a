// Every command the extension contributes (package.json lists their titles and menus).

import * as vscode from "vscode";
import { daemonLogPath } from "../daemon/locations";
import { describeError } from "../protocol/rpcError";
import { showError } from "../ui/showError";
import type { CommandContext } from "./context";
import { ForwardsWatch, forwardPortCommand, openForwardedPort, openTensorBoard } from "./forwardCommands";
import { preflightHost, startRun } from "./hostCommands";
import { LogTails } from "./logTails";
import { pickRun } from "./pickTarget";
import { restartRun } from "./restartCommands";
import { fetchFiles, showStatus, stopRun } from "./runCommands";
import { selectedRuns } from "../panel/overlayData";
import { RunPanels } from "../panel/runPanel";

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const tails = new LogTails(ctx.connection);
  const panels = new RunPanels(ctx.connection, ctx.extensionUri, (line) => ctx.log.appendLine(line));
  const forwards = new ForwardsWatch(ctx.connection, (line) => ctx.log.appendLine(line));
  const command = (id: string, run: (arg: unknown) => Promise<void>): vscode.Disposable =>
    vscode.commands.registerCommand(id, async (arg: unknown) => {
      try {
        await run(arg);
      } catch (error) {
        showError(error, ctx.log);
      }
    });
  return [
    tails,
    panels,
    forwards,
    command("rtrain.refresh", () => refresh(ctx)),
    command("rtrain.startRun", (arg) => startRun(ctx, tails, arg)),
    command("rtrain.tail", async (arg) => {
      const run = await pickRun(ctx, arg, "tail");
      if (run) await tails.tail(run);
    }),
    // From the tree, VS Code passes the row clicked and every row selected: several runs (or
    // a sweep's row) open one panel with their curves overlaid.
    vscode.commands.registerCommand("rtrain.showRun", async (arg: unknown, selected: unknown) => {
      try {
        // From the palette: the rows selected in the tree now.
        const rows = arg === undefined && selected === undefined ? ctx.view.selection : selected;
        const runs = selectedRuns(arg, rows, (name) => ctx.model.runsOfSweep(name));
        const sweep = typeof arg === "object" && arg !== null && (arg as { kind?: unknown }).kind === "sweep";
        if (runs.length > 1 || sweep) return panels.showMany(runs);
        const run = await pickRun(ctx, arg, "show");
        if (run) panels.show(run);
      } catch (error) {
        showError(error, ctx.log);
      }
    }),
    command("rtrain.status", (arg) => showStatus(ctx, arg)),
    command("rtrain.fetch", (arg) => fetchFiles(ctx, arg)),
    command("rtrain.stop", (arg) => stopRun(ctx, arg)),
    command("rtrain.restart", (arg) => restartRun(ctx, tails, arg, false)),
    command("rtrain.restartWithCode", (arg) => restartRun(ctx, tails, arg, true)),
    command("rtrain.preflight", (arg) => preflightHost(ctx, arg)),
    command("rtrain.openDaemonLog", () => openDaemonLog(ctx)),
    command("rtrain.openForward", (arg) => openForwardedPort(ctx, forwards, arg)),
    command("rtrain.forwardPort", (arg) => forwardPortCommand(ctx, forwards, arg)),
    command("rtrain.tensorboard", (arg) => openTensorBoard(ctx, forwards, arg)),
  ];
}

/** Reconnect (starting the daemon if needed) and reload the tree. */
async function refresh(ctx: CommandContext): Promise<void> {
  const wasConnected = ctx.connection.state.status === "connected";
  await ctx.connection.connect(true);
  // A fresh connection reloads by itself; an existing one is asked again.
  if (wasConnected) await ctx.sync.reload();
}

async function openDaemonLog(ctx: CommandContext): Promise<void> {
  let path: string;
  try {
    path = (await ctx.connection.request("daemon/info")).logPath;
  } catch (error) {
    path = daemonLogPath(ctx.env());
    ctx.log.appendLine(`daemon/info failed (${describeError(error)}); opening ${path}`);
  }
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  await vscode.window.showTextDocument(document, { preview: false });
}
