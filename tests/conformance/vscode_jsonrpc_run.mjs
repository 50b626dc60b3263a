// A whole run on `local`, driven by Microsoft's vscode-jsonrpc as any editor extension
// would use it: LSP-style initialize, onProgress handlers, notifications, a cancelled
// request. Prints what it saw as one JSON object; the Python test asserts on it.
//
// Usage: node vscode_jsonrpc_run.mjs SOCKET CONFIG WORKDIR FETCH_DEST RUN_A RUN_B

import net from "node:net";
import { once } from "node:events";
import {
  CancellationTokenSource,
  createMessageConnection,
  ProgressType,
  ResponseError,
  SocketMessageReader,
  SocketMessageWriter,
} from "vscode-jsonrpc/node.js";

const [socketPath, config, workdir, fetchDest, runA, runB] = process.argv.slice(2);
const socket = net.createConnection(socketPath);
await once(socket, "connect");
const connection = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));

const seen = { progress: { upload: [], fetch: [] }, logs: { [runA]: "", [runB]: "" } };
const progress = new ProgressType();
connection.onProgress(progress, "upload", (value) => seen.progress.upload.push(value));
connection.onProgress(progress, "fetch", (value) => seen.progress.fetch.push(value));
let firstLineOfB;
const bSpoke = new Promise((resolve) => (firstLineOfB = resolve));
connection.onNotification("run/log", (params) => {
  seen.logs[params.runId] += params.text;
  if (params.runId === runB) firstLineOfB();
});
connection.listen();

// What a generic LSP client sends: no protocolVersion, fields rtrain does not know.
seen.initialize = await connection.sendRequest("initialize", {
  processId: process.pid,
  clientInfo: { name: "vscode-jsonrpc-conformance", version: "8" },
  rootUri: null,
  capabilities: { window: { workDoneProgress: true } },
});
await connection.sendNotification("initialized", {});

const start = (runId, command) =>
  connection.sendRequest("run/start", { host: "local", config, runId, workdir, command, gpus: 0, progressToken: "upload" });
seen.started = await start(runA, ["sh", "-c", "echo step 1; echo step 2; echo weights > model.bin"]);
seen.tailed = await connection.sendRequest("run/tail", { host: "local", runId: runA, workdir, follow: true });
seen.fetched = await connection.sendRequest("run/fetch", {
  host: "local", runId: runA, workdir, path: "model.bin", dest: fetchDest, progressToken: "fetch",
});

// Cancel a tail that would follow forever, once the run has spoken.
await start(runB, ["sh", "-c", "echo started; exec sleep 600"]);
const source = new CancellationTokenSource();
const following = connection.sendRequest("run/tail", { host: "local", runId: runB, workdir, follow: true }, source.token);
await bSpoke;
source.cancel();
try {
  await following;
  seen.cancelled = { code: null };
} catch (error) {
  seen.cancelled = error instanceof ResponseError ? { code: error.code, message: error.message } : { code: String(error) };
}
seen.stopped = await connection.sendRequest("run/stop", { host: "local", runId: runB, workdir, grace: 5 });

seen.unknownField = await connection
  .sendRequest("run/status", { host: "local", runId: runA, workdir, rootUri: null })
  .then(
    () => ({ code: null }),
    (error) => ({ code: error.code, message: error.message }),
  );
seen.shutdown = await connection.sendRequest("shutdown");
await connection.sendNotification("exit");
await once(socket, "close");
connection.dispose();
process.stdout.write(JSON.stringify(seen) + "\n");
