// Tail: one output channel per run, fed by `run/log` notifications during a `run/tail`
// request. The next offset is remembered, so a tail resumed after the daemon restarted (or
// asked for again) continues where it stopped instead of repeating the log.

import * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import type { LogChunk, RunInfo } from "../protocol/generated";
import { describeError, RpcError } from "../protocol/rpcError";
import { stateText } from "../tree/presentation";
import { runKey, type RunKey } from "../tree/runsModel";
import { CarriageReturns } from "../log/carriageReturns";
import { LogCursor } from "../log/logCursor";

interface Tail {
  run: { host: string; runId: string; workdir?: string | null };
  channel: vscode.OutputChannel;
  cursor: LogCursor;
  bars: CarriageReturns;
  following: boolean;
  /** The daemon said the log is complete (the run ended): nothing more will come. */
  ended: boolean;
  /** Resume after a reconnect: the daemon went away while this tail was following. */
  interrupted: boolean;
}

export class LogTails implements vscode.Disposable {
  private readonly tails = new Map<RunKey, Tail>();
  private readonly stop: Array<() => void>;

  constructor(private readonly connection: DaemonConnection) {
    this.stop = [
      connection.onNotification((n) => {
        if (n.method === "run/log") this.append(n.params);
      }),
      connection.onStateChange((state) => {
        if (state.status !== "connected") return;
        for (const tail of this.tails.values()) {
          // A failure is already written into the tail's channel.
          if (tail.interrupted) this.follow(tail).catch(() => undefined);
        }
      }),
    ];
  }

  /** Show the run's channel and follow its log (from where this window last stopped). */
  async tail(run: RunInfo | Tail["run"]): Promise<void> {
    const key = runKey(run);
    let tail = this.tails.get(key);
    if (tail === undefined) {
      const channel = vscode.window.createOutputChannel(`rtrain ${run.host}/${run.runId}`);
      tail = {
        run: { host: run.host, runId: run.runId, workdir: run.workdir },
        channel,
        cursor: new LogCursor(),
        bars: new CarriageReturns(),
        following: false,
        ended: false,
        interrupted: false,
      };
      this.tails.set(key, tail);
    }
    tail.channel.show(true);
    if (!tail.following && !tail.ended) await this.follow(tail);
  }

  dispose(): void {
    for (const undo of this.stop) undo();
    for (const tail of this.tails.values()) tail.channel.dispose();
    this.tails.clear();
  }

  private async follow(tail: Tail): Promise<void> {
    tail.following = true;
    tail.interrupted = false;
    try {
      const result = await this.connection.request("run/tail", {
        host: tail.run.host,
        runId: tail.run.runId,
        ...(tail.run.workdir ? { workdir: tail.run.workdir } : {}),
        offset: tail.cursor.nextOffset,
        follow: true,
      });
      // A queued run's log is still to come.
      const going = ["queued", "running", "unknown"];
      tail.ended = !going.includes(result.run.state);
      tail.channel.append(tail.bars.push("\n"));
      tail.channel.appendLine(`[rtrain] ${tail.run.runId} is ${stateText(result.run)}; the log ends here.`);
    } catch (error) {
      if (error instanceof RpcError && error.kind === "daemon_unavailable") {
        tail.interrupted = true;
        tail.channel.appendLine("[rtrain] lost the daemon; the tail resumes when it is back.");
      } else {
        tail.channel.appendLine(`[rtrain] tail stopped: ${describeError(error)}`);
        throw error;
      }
    } finally {
      tail.following = false;
    }
  }

  private append(chunk: LogChunk): void {
    const tail = this.tails.get(runKey(chunk));
    if (tail === undefined) return;
    const { text, restarted } = tail.cursor.accept(chunk);
    if (restarted) tail.channel.appendLine("[rtrain] the log was replaced; starting over.");
    const shown = tail.bars.push(text);
    if (shown) tail.channel.append(shown);
  }
}
