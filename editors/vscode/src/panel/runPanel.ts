// The run panel: a webview per run with its live loss curve (and any other series, picked
// with checkboxes), progress and ETA, and the host's GPU utilization and memory over time.
// Fed by one `run/metrics` request with `follow`: its `run/points` notifications update the
// chart as the daemon reads the log; nothing polls. The chart library (uPlot) is bundled
// with the extension and loaded from it, so the panel needs no network.

import * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import { describeError, RpcError } from "../protocol/rpcError";
import { runKey, type RunKey } from "../tree/runsModel";
import { OverlayPanel } from "./overlayPanel";
import type { RunRef } from "./overlayData";
import { FollowingPanel } from "./followingPanel";
import { PanelData } from "./panelData";

export class RunPanels implements vscode.Disposable {
  private readonly panels = new Map<RunKey, RunPanel>();
  // Overlays by the runs they show (their keys, in order): the same selection reopens one.
  private readonly overlays = new Map<string, OverlayPanel>();

  constructor(
    private readonly connection: DaemonConnection,
    private readonly extensionUri: vscode.Uri,
    private readonly log: (line: string) => void,
  ) {}

  show(run: RunRef): void {
    const key = runKey(run);
    const open = this.panels.get(key);
    if (open) {
      open.reveal();
      return;
    }
    const panel = new RunPanel(this.connection, this.extensionUri, run, this.log, () => this.panels.delete(key));
    this.panels.set(key, panel);
  }

  /** Several runs: their curves overlaid in one panel; one run: its own panel. */
  showMany(runs: RunRef[]): void {
    if (runs.length === 1) return this.show(runs[0]);
    if (runs.length === 0) return;
    const key = runs.map(runKey).join("\n");
    const open = this.overlays.get(key);
    if (open) {
      open.reveal();
      return;
    }
    this.overlays.set(key, new OverlayPanel(this.connection, this.extensionUri, runs, this.log, () => this.overlays.delete(key)));
  }

  dispose(): void {
    for (const panel of [...this.panels.values(), ...this.overlays.values()]) panel.dispose();
    this.panels.clear();
    this.overlays.clear();
  }
}

class RunPanel extends FollowingPanel {
  private readonly data: PanelData;
  private following = false;
  private ended = false;

  constructor(
    private readonly connection: DaemonConnection,
    extensionUri: vscode.Uri,
    private readonly run: RunRef,
    private readonly log: (line: string) => void,
    onDispose: () => void,
  ) {
    super(extensionUri, `rtrain: ${run.runId}`, onDispose);
    this.data = new PanelData(run.host, run.runId);
    this.stop.push(
      connection.onNotification((n) => {
        if (n.method === "run/points" && this.data.applyUpdate(n.params)) this.post();
      }),
      connection.onStateChange((state) => {
        if (state.status === "connected" && !this.following && !this.ended) void this.follow();
      }),
    );
    void this.follow();
  }

  protected view(): unknown {
    return this.data.view();
  }

  protected toggle(name: string, shown: boolean): void {
    this.data.toggle(name, shown);
  }

  private async follow(): Promise<void> {
    this.following = true;
    try {
      const result = await this.connection.request(
        "run/metrics",
        { host: this.run.host, runId: this.run.runId, ...(this.run.workdir ? { workdir: this.run.workdir } : {}), follow: true },
        { signal: this.abort.signal },
      );
      this.data.applyResult(result);
      this.ended = true;
      this.error = undefined;
    } catch (error) {
      if (this.abort.signal.aborted) return;
      if (!(error instanceof RpcError && error.kind === "daemon_unavailable")) this.ended = true;
      this.error = describeError(error);
      this.log(`run panel ${this.run.host}/${this.run.runId}: ${this.error}`);
    } finally {
      this.following = false;
    }
    this.post();
  }
}
