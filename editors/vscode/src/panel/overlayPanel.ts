// The run panel on several runs: their curves of one metric overlaid in one chart (the
// runs selected together in the tree, or a sweep's). Each run is followed as a run's own
// panel follows it (one `run/metrics` with `follow`, its `run/points` as they come); the
// page is the run panel's, told it draws an overlay.

import * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import { describeError, RpcError } from "../protocol/rpcError";
import { overlayView, type RunRef } from "./overlayData";
import { FollowingPanel } from "./followingPanel";
import { PanelData } from "./panelData";

export class OverlayPanel extends FollowingPanel {
  private readonly data: PanelData[];
  private readonly hidden = new Set<string>();
  private readonly following = new Set<number>();
  private readonly ended = new Set<number>();

  constructor(
    private readonly connection: DaemonConnection,
    extensionUri: vscode.Uri,
    private readonly runs: RunRef[],
    private readonly log: (line: string) => void,
    onDispose: () => void,
  ) {
    super(extensionUri, `rtrain: ${runs.length} runs`, onDispose);
    this.data = runs.map((run) => new PanelData(run.host, run.runId));
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
    this.runs.forEach((_, i) => void this.follow(i));
  }

  protected view(): unknown {
    return overlayView(this.data, this.hidden);
  }

  protected toggle(name: string, shown: boolean): void {
    if (shown) this.hidden.delete(name);
    else this.hidden.add(name);
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
}
