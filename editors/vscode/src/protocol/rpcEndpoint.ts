// JSON-RPC 2.0 over one byte stream (the daemon's Unix socket): typed requests with
// cancellation, notifications both ways, error answers as RpcError. No lifecycle here;
// DaemonConnection does initialize/initialized.

import type { Duplex } from "node:stream";
import { encodeFrame, FrameDecoder, FramingError } from "./framing";
import type { ClientNotifications, ClientRequests, ServerNotifications } from "./generated";
import { daemonUnavailable, ErrorCode, RpcError } from "./rpcError";

export type RequestMethod = keyof ClientRequests;
export type ParamsOf<M extends RequestMethod> = ClientRequests[M]["params"];
export type ResultOf<M extends RequestMethod> = ClientRequests[M]["result"];
/** Params may be left out when every field is optional. */
export type ParamsArg<M extends RequestMethod> = Record<string, never> extends ParamsOf<M>
  ? [params?: ParamsOf<M>]
  : [params: ParamsOf<M>];

export type ServerNotification = {
  [M in keyof ServerNotifications]: { method: M; params: ServerNotifications[M] };
}[keyof ServerNotifications];

export interface RequestOptions {
  /** Aborting sends `$/cancelRequest`; the promise then rejects with the daemon's -32800 answer. */
  signal?: AbortSignal;
}

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: RpcError): void;
}

interface IncomingMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
}

export class RpcEndpoint {
  private readonly decoder: FrameDecoder;
  private readonly pending = new Map<number, Pending>();
  private readonly notificationListeners = new Set<(n: ServerNotification) => void>();
  private readonly closeListeners = new Set<(reason: string) => void>();
  private readonly strayErrorListeners = new Set<(error: RpcError) => void>();
  private nextId = 1;
  private closedReason: string | null = null;

  constructor(
    private readonly stream: Duplex,
    maxFrame?: number,
  ) {
    this.decoder = new FrameDecoder(maxFrame);
    stream.on("data", (chunk: Buffer) => this.receive(chunk));
    stream.on("error", (error: Error) => this.shutDown(`Lost the connection to the daemon: ${error.message}`));
    stream.on("close", () => this.shutDown("The daemon closed the connection"));
  }

  get closed(): boolean {
    return this.closedReason !== null;
  }

  request<M extends RequestMethod>(method: M, ...args: [...ParamsArg<M>, RequestOptions?]): Promise<ResultOf<M>> {
    const [params, options] = args as unknown as [ParamsOf<M> | undefined, RequestOptions | undefined];
    if (this.closedReason !== null) return Promise.reject(daemonUnavailable(this.closedReason));
    const id = this.nextId++;
    const signal = options?.signal;
    return new Promise<ResultOf<M>>((resolve, reject) => {
      const onAbort = (): void => this.notify("$/cancelRequest", { id });
      this.pending.set(id, {
        method,
        resolve: (result) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(result as ResultOf<M>);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      this.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  notify<M extends keyof ClientNotifications>(method: M, params?: ClientNotifications[M]): void {
    if (this.closedReason !== null) return;
    this.send({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) });
  }

  onNotification(listener: (notification: ServerNotification) => void): () => void {
    this.notificationListeners.add(listener);
    return () => this.notificationListeners.delete(listener);
  }

  onClose(listener: (reason: string) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Error answers that belong to no request (the daemon could not read what it was sent). */
  onStrayError(listener: (error: RpcError) => void): () => void {
    this.strayErrorListeners.add(listener);
    return () => this.strayErrorListeners.delete(listener);
  }

  close(): void {
    this.stream.end();
    this.stream.destroy();
    this.shutDown("The connection to the daemon was closed");
  }

  /** Write raw bytes (tests use it to send split or malformed frames). */
  writeRaw(bytes: Buffer): void {
    this.stream.write(bytes);
  }

  private send(message: object): void {
    this.stream.write(encodeFrame(JSON.stringify(message)));
  }

  private receive(chunk: Buffer): void {
    let bodies: string[];
    try {
      bodies = this.decoder.push(chunk);
    } catch (error) {
      const why = error instanceof FramingError ? error.message : String(error);
      this.stream.destroy();
      this.shutDown(`The daemon sent a malformed frame: ${why}`);
      return;
    }
    for (const body of bodies) {
      let message: unknown;
      try {
        message = JSON.parse(body);
      } catch {
        this.stream.destroy();
        this.shutDown("The daemon sent a frame that is not JSON");
        return;
      }
      for (const item of Array.isArray(message) ? message : [message]) {
        if (item !== null && typeof item === "object") this.dispatch(item as IncomingMessage);
      }
    }
  }

  private dispatch(message: IncomingMessage): void {
    const isAnswer = "result" in message || "error" in message;
    if (isAnswer) {
      this.settle(message);
    } else if (typeof message.method === "string" && message.id === undefined) {
      const notification = { method: message.method, params: message.params ?? {} } as ServerNotification;
      for (const listener of [...this.notificationListeners]) listener(notification);
    } else if (typeof message.method === "string") {
      // The daemon sends no requests today; say so rather than leave it waiting.
      this.send({
        jsonrpc: "2.0",
        id: message.id,
        error: { code: ErrorCode.methodNotFound, message: `Method not found: ${message.method}.` },
      });
    }
  }

  private settle(message: IncomingMessage): void {
    const id = typeof message.id === "number" ? message.id : null;
    const pending = id === null ? undefined : this.pending.get(id);
    if (message.error !== undefined) {
      const { code, message: text, data } = message.error;
      const error = new RpcError(
        typeof code === "number" ? code : ErrorCode.internalError,
        typeof text === "string" ? text : "The daemon answered with a malformed error",
        data !== null && typeof data === "object" ? (data as Record<string, unknown>) : undefined,
      );
      if (pending !== undefined) {
        this.pending.delete(id as number);
        pending.reject(error);
      } else if (id === null) {
        // A null id answers a message the daemon could not read; no request is waiting for it.
        for (const listener of [...this.strayErrorListeners]) listener(error);
      }
      return;
    }
    if (pending !== undefined) {
      this.pending.delete(id as number);
      pending.resolve(message.result);
    }
  }

  private failAll(error: RpcError): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const pending of waiting) pending.reject(error);
  }

  private shutDown(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    this.failAll(daemonUnavailable(reason));
    for (const listener of [...this.closeListeners]) listener(reason);
  }
}
