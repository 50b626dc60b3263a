// Errors as the user sees them: one sentence and a stable kind, never a stack trace.
// The codes and kinds are generated from the daemon's schema (generated.ts).

import { ERROR_KINDS, ErrorCode, type ErrorKind } from "./generated";

export { ErrorCode };

// Kinds for errors that carry no `data.kind` (the JSON-RPC standard ones) or never reached the daemon.
const KIND_OF_CODE = {
  [ErrorCode.parseError]: "parse_error",
  [ErrorCode.invalidRequest]: "invalid_request",
  [ErrorCode.methodNotFound]: "method_not_found",
  [ErrorCode.invalidParams]: "invalid_params",
  [ErrorCode.internalError]: "internal_error",
  [ErrorCode.serverNotInitialized]: "not_initialized",
  [ErrorCode.requestCancelled]: "cancelled",
} as const;

/** The daemon's stable kinds (generated), and the extension's own for errors that have none. */
export type Kind =
  | ErrorKind
  | (typeof KIND_OF_CODE)[keyof typeof KIND_OF_CODE]
  | "daemon_unavailable"
  | "rtrain_not_found"
  | "daemon_start_failed"
  | "error";

function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === "string" && (ERROR_KINDS as readonly string[]).includes(value);
}

/** An error answer from the daemon, or a failure to reach it (`code` 0, a local `kind`). */
export class RpcError extends Error {
  override name = "RpcError";
  readonly kind: Kind;

  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
    kind?: Kind,
  ) {
    super(message);
    const dataKind = isErrorKind(data?.kind) ? data.kind : undefined;
    const codeKind = (KIND_OF_CODE as Record<number, Kind | undefined>)[code];
    this.kind = kind ?? dataKind ?? codeKind ?? "error";
  }

  get cancelled(): boolean {
    return this.code === ErrorCode.requestCancelled;
  }
}

/** The daemon could not be reached, or the connection to it ended. */
export function daemonUnavailable(message: string): RpcError {
  return new RpcError(0, message, undefined, "daemon_unavailable");
}

/** One line for a notification: "Run x is not on host y (run_not_found)." */
export function describeError(error: unknown): string {
  if (error instanceof RpcError) return withKind(error.message, error.kind);
  if (error instanceof Error) return withKind(error.message, "error");
  return withKind(String(error), "error");
}

function withKind(message: string, kind: string): string {
  const sentence = message.replace(/\s+/g, " ").trim().replace(/[.\s]+$/, "") || "Unknown error";
  return `${sentence} (${kind}).`;
}
