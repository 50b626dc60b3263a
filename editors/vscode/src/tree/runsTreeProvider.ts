// The "rtrain" view: hosts at the top level, their runs (newest first) under each; then each
// sweep (`rtrain sweep`), holding its runs in their order.

import * as vscode from "vscode";
import { hostLook, runLook, type Look } from "./presentation";
import type { RunsModel } from "./runsModel";

export type HostNode = { kind: "host"; alias: string };
// `sweep`: the row under its sweep's node (the same run also shows under its host).
export type RunNode = { kind: "run"; host: string; runId: string; sweep?: string };
export type SweepNode = { kind: "sweep"; name: string };
export type TreeNode = HostNode | RunNode | SweepNode;

const ROW_REDRAW_MS = 10_000;

export class RunsTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;
  // One node object per id, so VS Code keeps selection and expansion across refreshes.
  private readonly nodes = new Map<string, TreeNode>();
  private readonly stopListening: () => void;

  // When a row that only shows new progress or loss was last redrawn, and its redraw waiting.
  private readonly rowRedrawn = new Map<string, number>();
  private readonly rowTimers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly model: RunsModel) {
    this.stopListening = model.onDidChange((only) => {
      if (only === undefined) this.changeEmitter.fire(undefined);
      else this.redrawRow(only);
    });
  }

  /** A row whose log moved is redrawn alone, at most every ROW_REDRAW_MS: a tree redrawn
   * at every poll would take its inline buttons away from under the pointer. */
  private redrawRow(key: string): void {
    if (this.rowTimers.has(key)) return;
    const wait = Math.max(0, (this.rowRedrawn.get(key) ?? 0) + ROW_REDRAW_MS - Date.now());
    this.rowTimers.set(
      key,
      setTimeout(() => {
        this.rowTimers.delete(key);
        this.rowRedrawn.set(key, Date.now());
        const node = this.nodes.get(`run:${key}`);
        this.changeEmitter.fire(node);
      }, wait),
    );
  }

  getChildren(node?: TreeNode): TreeNode[] {
    if (node === undefined) {
      const hosts: TreeNode[] = this.model.hosts().map((h) => this.hostNode(h.alias));
      return [...hosts, ...this.model.sweeps().map((name) => this.sweepNode(name))];
    }
    if (node.kind === "host") return this.model.runsOf(node.alias).map((r) => this.runNode(r.host, r.runId));
    if (node.kind === "sweep") {
      return this.model.runsOfSweep(node.name).map((r) => this.runNode(r.host, r.runId, node.name));
    }
    return [];
  }

  getParent(node: TreeNode): TreeNode | undefined {
    if (node.kind !== "run") return undefined;
    return node.sweep !== undefined ? this.sweepNode(node.sweep) : this.hostNode(node.host);
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    if (node.kind === "host") {
      const host = this.model.host(node.alias) ?? { alias: node.alias, connection: "disconnected" as const };
      const item = toItem(hostLook(host, this.model.runningCount(node.alias)), `host:${node.alias}`);
      item.collapsibleState = vscode.TreeItemCollapsibleState.Expanded;
      return item;
    }
    if (node.kind === "sweep") {
      const runs = this.model.runsOfSweep(node.name);
      const done = runs.filter((r) => r.state === "completed").length;
      const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `sweep:${node.name}`;
      item.description = `sweep · ${done}/${runs.length} completed`;
      item.contextValue = "sweep";
      item.iconPath = new vscode.ThemeIcon("list-tree");
      return item;
    }
    const run = this.model.run(node.host, node.runId);
    if (run === undefined) return new vscode.TreeItem(node.runId);
    // One id per place a run shows: under its host, and under its sweep.
    const where = node.sweep !== undefined ? `sweeprun:${node.sweep}:` : "run:";
    const item = toItem(runLook(run), `${where}${node.host}/${node.runId}`);
    item.command = { command: "rtrain.tail", title: "Tail Log", arguments: [node] };
    return item;
  }

  dispose(): void {
    for (const timer of this.rowTimers.values()) clearTimeout(timer);
    this.stopListening();
    this.changeEmitter.dispose();
  }

  private hostNode(alias: string): HostNode {
    return this.cached(`host:${alias}`, () => ({ kind: "host", alias })) as HostNode;
  }

  private runNode(host: string, runId: string, sweep?: string): RunNode {
    if (sweep !== undefined) {
      return this.cached(`sweeprun:${sweep}:${host}/${runId}`, () => ({ kind: "run", host, runId, sweep })) as RunNode;
    }
    return this.cached(`run:${host}/${runId}`, () => ({ kind: "run", host, runId })) as RunNode;
  }

  private sweepNode(name: string): SweepNode {
    return this.cached(`sweep:${name}`, () => ({ kind: "sweep", name })) as SweepNode;
  }

  private cached(id: string, make: () => TreeNode): TreeNode {
    let node = this.nodes.get(id);
    if (node === undefined) this.nodes.set(id, (node = make()));
    return node;
  }
}

function toItem(look: Look, id: string): vscode.TreeItem {
  const item = new vscode.TreeItem(look.label, vscode.TreeItemCollapsibleState.None);
  item.id = id;
  item.description = look.description;
  item.tooltip = look.tooltip;
  item.contextValue = look.contextValue;
  item.iconPath = new vscode.ThemeIcon(look.icon, look.color ? new vscode.ThemeColor(look.color) : undefined);
  return item;
}
