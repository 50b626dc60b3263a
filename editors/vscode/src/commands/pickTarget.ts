// Which run or host a command acts on: the tree item it was invoked on, else the tree's
// selection, else the user picks one.

import * as vscode from "vscode";
import type { RunInfo } from "../protocol/generated";
import { stateText } from "../tree/presentation";
import type { TreeNode } from "../tree/runsTreeProvider";
import type { CommandContext } from "./context";

export async function pickRun(
  ctx: CommandContext,
  arg: unknown,
  purpose: string,
  filter: (run: RunInfo) => boolean = () => true,
): Promise<RunInfo | undefined> {
  const node = asNode(arg) ?? ctx.view.selection[0];
  if (node?.kind === "run") return ctx.model.run(node.host, node.runId) ?? { host: node.host, runId: node.runId, state: "unknown" };
  const runs = ctx.model.allRuns().filter(filter);
  if (runs.length === 0) {
    void vscode.window.showInformationMessage("rtrain: no run to choose from.");
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    runs.map((run) => ({ label: run.runId, description: `${run.host} · ${stateText(run)}`, run })),
    { placeHolder: `Run to ${purpose}` },
  );
  return picked?.run;
}

export async function pickHost(ctx: CommandContext, arg: unknown, purpose: string): Promise<string | undefined> {
  const node = asNode(arg) ?? ctx.view.selection[0];
  if (node?.kind === "host") return node.alias;
  if (node?.kind === "run") return node.host;
  return askHost(ctx, purpose);
}

/** Known hosts, plus any ssh alias typed in. */
export async function askHost(ctx: CommandContext, purpose: string): Promise<string | undefined> {
  const other = "Another host (ssh alias)…";
  const items = [...ctx.model.hosts().map((h) => ({ label: h.alias, description: h.connection })), { label: other, description: "" }];
  const picked = await vscode.window.showQuickPick(items, { placeHolder: `Host to ${purpose}` });
  if (picked?.label !== other) return picked?.label;
  // `@NAME` names a pool of config.toml: the daemon places the run where GPUs are free.
  const alias = await vscode.window.showInputBox({
    prompt: "Host alias, as in your ssh config, or @POOL for a pool of config.toml",
    placeHolder: "gpu-box",
  });
  return alias?.trim() || undefined;
}

function asNode(arg: unknown): TreeNode | undefined {
  if (arg && typeof arg === "object" && "kind" in arg) {
    const kind = (arg as { kind: unknown }).kind;
    if (kind === "run" || kind === "host") return arg as TreeNode;
  }
  return undefined;
}
