// Keeps a RunsModel equal to the daemon's registry: a snapshot on every (re)connect, with a
// `run/changed` subscription, then the notifications alone. No timers, no polling.

import type { DaemonConnection } from "../daemon/daemonConnection";
import type { HostInfo } from "../protocol/generated";
import { describeError } from "../protocol/rpcError";
import type { RunsModel } from "./runsModel";

export class RunsSync {
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly connection: DaemonConnection,
    private readonly model: RunsModel,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.unsubscribe.push(
      connection.onStateChange((state) => {
        if (state.status === "connected") void this.reload();
        else if (state.status === "disconnected") model.clear();
      }),
      connection.onNotification((notification) => {
        if (notification.method !== "run/changed") return;
        if (notification.params.removed) {
          model.removeRun(notification.params.run.host, notification.params.run.runId);
          return;
        }
        const newHost = model.applyRun(notification.params.run);
        if (newHost) void this.reloadHosts();
      }),
    );
    if (connection.state.status === "connected") void this.reload();
  }

  /** Fetch the snapshot (and subscribe). Resolves once the model holds it; never rejects. */
  async reload(): Promise<void> {
    this.model.beginSnapshot();
    try {
      const endpoint = await this.connection.connect(false);
      const [runs, hosts] = await Promise.all([
        endpoint.request("runs/list", { subscribe: true }),
        this.hosts(),
      ]);
      this.model.applySnapshot(hosts ?? [], runs.runs);
    } catch (error) {
      this.model.abandonSnapshot();
      this.log(`could not list runs: ${describeError(error)}`);
    }
  }

  dispose(): void {
    for (const undo of this.unsubscribe) undo();
  }

  private async reloadHosts(): Promise<void> {
    const hosts = await this.hosts();
    if (hosts) this.model.applyHosts(hosts);
  }

  // A daemon without hosts/list still shows every host that has runs.
  private async hosts(): Promise<HostInfo[] | null> {
    try {
      const endpoint = await this.connection.connect(false);
      return (await endpoint.request("hosts/list")).hosts;
    } catch (error) {
      this.log(`could not list hosts: ${describeError(error)}`);
      return null;
    }
  }
}
