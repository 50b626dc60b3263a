// The run panel on several runs: their curves of one metric overlaid in one chart (the
// runs selected together in the tree, or a sweep's). Each run is followed as a run's own
// panel follows it (one `run/metrics` with `follow`, its `run/points` as they come); the
// page is the run panel's, told it draws an overlay.

import * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import { describeError, RpcError } from "../protocol/rpcError";
import { overlayView, type RunRef } from "./overlayData";
import { PanelData } from "./panelData";
import { panelHtml } from "./panelHtml";

export class OverlayPanel {
  private readonly panel: vscode.WebviewPanel;
  private readonly data: PanelData[];
  private readonly abort = new AbortController();
  private readonly stop: Array<() => void> = [];
  private readonly hidden = new Set<string>();
  private readonly following = new Set<number>();
  private readonly ended = new Set<number>();
  private ready = false;
  private error: string | undefined;

  constructor(
    private readonly connection: DaemonConnection,
    extensionUri: vscode.Uri,
    private readonly runs: RunRef[],
    private readonly log: (line: string) => void,
    private readonly onDispose: () => void,
  ) {
    this.data = runs.map((run) => new PanelData(run.host, run.runId));
    const assets = vscode.Uri.joinPath(extensionUri, "out", "webview");
    this.panel = vscode.window.createWebviewPanel("rtrain.runPanel", `rtrain: ${runs.length} runs`, vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [assets],
    });
    this.panel.webview.html = panelHtml(this.panel.webview, assets);
    this.stop.push(
      connection.onNotification((n) => {
        if (n.method !== "run/points") return;
        if (this.data.some((data) => data.applyUpdate(n.params))) this.post();
      }),
      connection.onStateChange((state) => {
        if (state.status !== "connected") return;
        this.runs.forEach((_, i) => {
          if (!this.following.has(i) && !this.ended.has(i)) void this.follow(i);
        });
      }),
    );
    const messages = this.panel.webview.onDidReceiveMessage((message: { type: string; name?: string; shown?: boolean }) => {
      if (message.type === "ready") {
        this.ready = true;
        this.post();
      } else if (message.type === "toggle" && typeof message.name === "string") {
        if (message.shown === true) this.hidden.delete(message.name);
        else this.hidden.add(message.name);
        this.post();
      }
    });
    this.panel.onDidDispose(() => {
      messages.dispose();
      this.dispose();
    });
    this.runs.forEach((_, i) => void this.follow(i));
  }

  reveal(): void {
    this.panel.reveal();
  }

  dispose(): void {
    this.abort.abort();
    for (const undo of this.stop.splice(0)) undo();
    this.onDispose();
    try {
      this.panel.dispose();
    } catch {
      // already disposed
    }
  }

  private async follow(i: number): Promise<void> {
    const run = this.runs[i];
    this.following.add(i);
    try {
      const result = await this.connection.request(
        "run/metrics",
        { host: run.host, runId: run.runId, ...(run.workdir ? { workdir: run.workdir } : {}), follow: true },
        { signal: this.abort.signal },
      );
      this.data[i].applyResult(result);
      this.ended.add(i);
    } catch (error) {
      if (this.abort.signal.aborted) return;
      if (!(error instanceof RpcError && error.kind === "daemon_unavailable")) this.ended.add(i);
      this.error = `${run.runId}: ${describeError(error)}`;
      this.log(`run panel ${run.host}/${run.runId}: ${describeError(error)}`);
    } finally {
      this.following.delete(i);
    }
    this.post();
  }

  private post(): void {
    if (!this.ready) return;
    void this.panel.webview.postMessage({ type: "view", view: overlayView(this.data, this.hidden), error: this.error });
  }
}
