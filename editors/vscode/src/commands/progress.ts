// A request with a `progressToken`, shown in a VS Code progress notification: `$/progress`
// reports (LSP's shape: `{token, value}`) move the bar, and the notification's Cancel button sends `$/cancelRequest`.

import type * as vscode from "vscode";
import type { DaemonConnection } from "../daemon/daemonConnection";
import type { ProgressValue } from "../protocol/generated";
import { formatBytes } from "../tree/presentation";

export async function progressReporter<T>(
  connection: DaemonConnection,
  token: string,
  progress: vscode.Progress<{ message?: string; increment?: number }>,
  cancel: vscode.CancellationToken | undefined,
  send: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const abort = new AbortController();
  const cancelled = cancel?.onCancellationRequested(() => abort.abort());
  let shownPercent = 0;
  const stop = connection.onNotification((n) => {
    if (n.method !== "$/progress" || n.params.token !== token) return;
    const value = n.params.value;
    const report = describe(value);
    const percent = value.percentage ?? undefined;
    const increment = percent === undefined ? undefined : Math.max(0, percent - shownPercent);
    if (percent !== undefined) shownPercent = Math.max(shownPercent, percent);
    progress.report({ message: report, increment });
  });
  try {
    return await send(abort.signal);
  } finally {
    stop();
    cancelled?.dispose();
  }
}

function describe(p: ProgressValue): string | undefined {
  const bytes =
    p.doneBytes !== undefined && p.doneBytes !== null
      ? p.totalBytes
        ? `${formatBytes(p.doneBytes)} of ${formatBytes(p.totalBytes)}`
        : formatBytes(p.doneBytes)
      : undefined;
  return [p.message ?? p.title, bytes].filter(Boolean).join(" — ") || undefined;
}
