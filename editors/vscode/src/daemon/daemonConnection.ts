// One initialized connection to the daemon, kept alive: dials the socket, starts the daemon
// when none answers (if allowed), runs initialize/initialized, and reconnects after the
// daemon restarts. Listeners survive reconnects; `onStateChange` says when to reload.

import { watch, type FSWatcher } from "node:fs";
import { createConnection, type Socket } from "node:net";
import { basename, dirname } from "node:path";
import { PROTOCOL_VERSION, type InitializeResult } from "../protocol/generated";
import {
  RpcEndpoint,
  type ParamsArg,
  type RequestMethod,
  type RequestOptions,
  type ResultOf,
  type ServerNotification,
} from "../protocol/rpcEndpoint";
import { daemonUnavailable, describeError, RpcError } from "../protocol/rpcError";
import { startDaemon } from "./startDaemon";

export type ConnectionState =
  | { status: "connecting" }
  | { status: "connected"; server: InitializeResult }
  | { status: "disconnected"; reason: string };

export interface DaemonConnectionOptions {
  clientName: string;
  clientVersion: string;
  /** Read at each attempt, so a settings change applies without a reload. */
  socketPath(): string;
  executable(): string;
  /** Environment for `rtrain daemon start`. */
  env(): NodeJS.ProcessEnv;
  log?(line: string): void;
  /** Reconnect by itself after losing the daemon (default true). */
  reconnect?: boolean;
}

const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 10_000;

export class DaemonConnection {
  private endpoint: RpcEndpoint | undefined;
  private attempt: Promise<RpcEndpoint> | undefined;
  private currentState: ConnectionState = { status: "disconnected", reason: "Not connected yet" };
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly notificationListeners = new Set<(notification: ServerNotification) => void>();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = FIRST_RETRY_MS;
  private socketWatcher: FSWatcher | undefined;
  private disposed = false;

  constructor(private readonly options: DaemonConnectionOptions) {}

  get state(): ConnectionState {
    return this.currentState;
  }

  onStateChange(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  onNotification(listener: (notification: ServerNotification) => void): () => void {
    this.notificationListeners.add(listener);
    return () => this.notificationListeners.delete(listener);
  }

  /** The live endpoint; dials (and, with `spawn`, starts the daemon) when there is none. */
  async connect(spawn: boolean): Promise<RpcEndpoint> {
    if (this.endpoint && !this.endpoint.closed) return this.endpoint;
    if (this.attempt) {
      try {
        return await this.attempt;
      } catch (error) {
        if (!spawn) throw error;
      }
      if (this.endpoint && !this.endpoint.closed) return this.endpoint;
    }
    this.attempt ??= this.open(spawn).finally(() => (this.attempt = undefined));
    return this.attempt;
  }

  /** Send a request, starting the daemon first when none answers. */
  async request<M extends RequestMethod>(
    method: M,
    ...args: [...ParamsArg<M>, RequestOptions?]
  ): Promise<ResultOf<M>> {
    const endpoint = await this.connect(true);
    return endpoint.request(method, ...args);
  }

  /** Drop the connection and dial again (the socket setting changed). */
  restart(): Promise<RpcEndpoint> {
    const old = this.endpoint;
    this.endpoint = undefined;
    old?.close();
    return this.connect(true);
  }

  dispose(): void {
    this.disposed = true;
    this.stopRetrying();
    this.endpoint?.close();
    this.endpoint = undefined;
    this.stateListeners.clear();
    this.notificationListeners.clear();
  }

  private async open(spawn: boolean): Promise<RpcEndpoint> {
    this.stopRetrying();
    // Background retries stay quiet: the view keeps saying "disconnected" until one works.
    if (spawn) this.setState({ status: "connecting" });
    const path = this.options.socketPath();
    let endpoint: RpcEndpoint | undefined;
    try {
      endpoint = new RpcEndpoint(await this.dialOrStart(path, spawn));
      const server = await endpoint.request("initialize", {
        protocolVersion: PROTOCOL_VERSION,
        clientInfo: { name: this.options.clientName, version: this.options.clientVersion },
        processId: process.pid,
      });
      endpoint.notify("initialized", {});
      if (this.disposed) {
        endpoint.close();
        throw daemonUnavailable("The extension is shutting down");
      }
      const live = endpoint;
      endpoint.onNotification((n) => {
        for (const listener of [...this.notificationListeners]) listener(n);
      });
      endpoint.onClose((reason) => this.lost(live, reason));
      this.endpoint = endpoint;
      this.retryDelay = FIRST_RETRY_MS;
      this.options.log?.(`connected to rtrain ${server.serverInfo.version} at ${path}`);
      this.setState({ status: "connected", server });
      return endpoint;
    } catch (error) {
      endpoint?.close();
      const reason = describeError(error);
      this.options.log?.(`cannot connect: ${reason}`);
      // A quiet retry keeps the reason the user last saw (often the more telling one).
      if (spawn || this.currentState.status !== "disconnected") this.setState({ status: "disconnected", reason });
      // A daemon of another protocol will not change by itself: wait for the user.
      const hopeless = error instanceof RpcError && error.kind === "protocol_version_mismatch";
      if (!hopeless) this.retryLater();
      throw error;
    }
  }

  private async dialOrStart(path: string, spawn: boolean): Promise<Socket> {
    try {
      return await dial(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const absent = code === "ENOENT" || code === "ECONNREFUSED";
      if (!absent) throw daemonUnavailable(`Cannot reach the rtrain daemon at ${path}: ${(error as Error).message}`);
      if (!spawn) throw daemonUnavailable(`No rtrain daemon is running (socket ${path})`);
    }
    const executable = this.options.executable();
    this.options.log?.(`no daemon at ${path}; running \`${executable} daemon start\``);
    await startDaemon(executable, this.options.env());
    try {
      return await dial(path);
    } catch (error) {
      throw daemonUnavailable(`The daemon started but does not answer at ${path}: ${(error as Error).message}`);
    }
  }

  private lost(endpoint: RpcEndpoint, reason: string): void {
    if (this.endpoint !== endpoint) return;
    this.endpoint = undefined;
    if (this.disposed) return;
    this.options.log?.(`lost the daemon: ${reason}`);
    this.setState({ status: "disconnected", reason: `${reason}.` });
    this.retryDelay = FIRST_RETRY_MS;
    this.retryLater();
  }

  // Back off between attempts, and try at once when the socket file reappears.
  private retryLater(): void {
    if (this.disposed || this.options.reconnect === false || this.retryTimer) return;
    const retry = (): void => {
      this.stopRetrying();
      this.connect(false).catch(() => undefined);
    };
    this.retryTimer = setTimeout(retry, this.retryDelay);
    this.retryDelay = Math.min(this.retryDelay * 2, MAX_RETRY_MS);
    if (!this.socketWatcher) {
      const path = this.options.socketPath();
      try {
        this.socketWatcher = watch(dirname(path), (_event, name) => {
          if (name === basename(path)) retry();
        });
        this.socketWatcher.on("error", () => undefined);
      } catch {
        // The directory does not exist yet: the timer alone will notice the daemon.
      }
    }
  }

  private stopRetrying(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.socketWatcher?.close();
    this.socketWatcher = undefined;
  }

  private setState(state: ConnectionState): void {
    const same =
      state.status === this.currentState.status &&
      (state.status !== "disconnected" || state.reason === (this.currentState as { reason: string }).reason);
    if (same && state.status !== "connected") return;
    this.currentState = state;
    for (const listener of [...this.stateListeners]) listener(state);
  }
}

function dial(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ path });
    socket.once("connect", () => {
      socket.removeListener("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}
