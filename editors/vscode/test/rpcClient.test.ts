// The JSON-RPC client against a real daemon process (isolated under a temp dir).

import * as assert from "node:assert/strict";
import { createConnection } from "node:net";
import { after, before, describe, it } from "node:test";
import { DaemonConnection, type ConnectionState } from "../src/daemon/daemonConnection";
import { encodeFrame } from "../src/protocol/framing";
import { CLIENT_REQUESTS, PROTOCOL_VERSION, SERVER_NOTIFICATIONS } from "../src/protocol/generated";
import { RpcEndpoint } from "../src/protocol/rpcEndpoint";
import { describeError, RpcError } from "../src/protocol/rpcError";
import { isolatedDaemon, RTRAIN, RTRAIN_MISSING, rtrainAvailable, waitFor, type IsolatedDaemon } from "./support/isolatedDaemon";

function connectionTo(daemon: IsolatedDaemon, executable = RTRAIN): DaemonConnection {
  return new DaemonConnection({
    clientName: "rtrain-vscode-test",
    clientVersion: "0",
    socketPath: () => daemon.socket,
    executable: () => executable,
    env: () => daemon.env,
  });
}

function rawEndpoint(daemon: IsolatedDaemon): Promise<RpcEndpoint> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ path: daemon.socket });
    socket.once("connect", () => resolve(new RpcEndpoint(socket)));
    socket.once("error", reject);
  });
}

async function rejection(promise: Promise<unknown>): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof RpcError, `expected an RpcError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected the request to fail");
}

const initialize = { protocolVersion: PROTOCOL_VERSION, clientInfo: { name: "raw-test" } };

describe("rpc client against a real daemon", () => {
  let daemon: IsolatedDaemon;
  let connection: DaemonConnection;
  let available = false;

  before(async () => {
    available = await rtrainAvailable();
    daemon = isolatedDaemon();
  });
  after(async () => {
    connection?.dispose();
    await daemon.cleanup();
  });

  it("starts the daemon with `rtrain daemon start` when none answers, then initializes", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    connection = connectionTo(daemon);
    const states: string[] = [];
    connection.onStateChange((s) => states.push(s.status));
    await connection.connect(true);
    assert.deepEqual(states, ["connecting", "connected"]);
    const state = connection.state as Extract<ConnectionState, { status: "connected" }>;
    assert.equal(state.server.protocolVersion, PROTOCOL_VERSION);
    const info = await connection.request("daemon/info");
    assert.equal(info.socketPath, daemon.socket);
    assert.ok(info.clients >= 1);
  });

  it("talks to a daemon that serves every method of the schema the extension was built from", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const state = connection.state as Extract<ConnectionState, { status: "connected" }>;
    assert.deepEqual([...state.server.capabilities.methods].sort(), [...CLIENT_REQUESTS].sort());
    assert.deepEqual([...state.server.capabilities.notifications].sort(), [...SERVER_NOTIFICATIONS].sort());
  });

  it("does not start a daemon when told not to", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const other = isolatedDaemon();
    const lonely = new DaemonConnection({
      clientName: "t",
      clientVersion: "0",
      socketPath: () => other.socket,
      executable: () => RTRAIN,
      env: () => other.env,
      reconnect: false,
    });
    try {
      const error = await rejection(lonely.connect(false));
      assert.equal(error.kind, "daemon_unavailable");
      assert.match(describeError(error), /^No rtrain daemon is running \(socket .*\) \(daemon_unavailable\)\.$/);
    } finally {
      lonely.dispose();
      await other.cleanup();
    }
  });

  it("says in one sentence when the configured rtrain cannot be run", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const other = isolatedDaemon();
    const broken = new DaemonConnection({
      clientName: "t",
      clientVersion: "0",
      socketPath: () => other.socket,
      executable: () => "/nonexistent/rtrain",
      env: () => other.env,
      reconnect: false,
    });
    try {
      const error = await rejection(broken.connect(true));
      assert.equal(error.kind, "rtrain_not_found");
      assert.doesNotMatch(describeError(error), /\n|at .*\.js/);
      assert.equal(broken.state.status, "disconnected");
    } finally {
      broken.dispose();
      await other.cleanup();
    }
  });

  it("gets an answer to a request written one byte at a time", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const raw = await rawEndpoint(daemon);
    try {
      const frame = encodeFrame(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: initialize }));
      const answered = new Promise<unknown>((resolve) => {
        const socket = (raw as unknown as { stream: NodeJS.ReadableStream }).stream;
        socket.on("data", (chunk: Buffer) => resolve(chunk.toString("utf8")));
      });
      for (const byte of frame) raw.writeRaw(Buffer.from([byte]));
      assert.ok(String(await answered).includes(`"protocolVersion":${JSON.stringify(PROTOCOL_VERSION)}`));
    } finally {
      raw.close();
    }
  });

  it("answers a request before initialize with not_initialized", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const raw = await rawEndpoint(daemon);
    try {
      const error = await rejection(raw.request("daemon/info"));
      assert.equal(error.code, -32002);
      assert.equal(error.kind, "not_initialized");
      assert.match(describeError(error), /^Not initialized: send `initialize` first \(not_initialized\)\.$/);
    } finally {
      raw.close();
    }
  });

  it("reports invalid params, unknown methods and a protocol of another major version by kind", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const raw = await rawEndpoint(daemon);
    try {
      const mismatch = await rejection(raw.request("initialize", { protocolVersion: "99.0" }));
      assert.equal(mismatch.kind, "protocol_version_mismatch");
      await raw.request("initialize", initialize);
      raw.notify("initialized", {});
      const invalid = await rejection(raw.request("runs/list", { bogus: 1 } as never));
      assert.equal(invalid.kind, "invalid_params");
      const unknown = await rejection(raw.request("runs/forget" as never, {} as never));
      assert.equal(unknown.kind, "method_not_found");
      assert.ok(Array.isArray((await raw.request("runs/list", {})).runs), "the connection still serves");
    } finally {
      raw.close();
    }
  });

  it("hears about a message the daemon could not parse, and keeps the connection", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const raw = await rawEndpoint(daemon);
    try {
      await raw.request("initialize", initialize);
      const stray = new Promise<RpcError>((resolve) => raw.onStrayError(resolve));
      raw.writeRaw(encodeFrame("{not json"));
      assert.equal((await stray).kind, "parse_error");
      assert.equal((await raw.request("daemon/info")).socketPath, daemon.socket);
    } finally {
      raw.close();
    }
  });

  it("goes disconnected when the daemon stops, and reconnects by itself to the next one", async (t) => {
    if (!available) return t.skip(RTRAIN_MISSING);
    const before = await connection.request("daemon/info");
    const disconnected = waitFor("disconnected", (c) => connection.onStateChange(c), () => connection.state.status === "disconnected");
    await daemon.rtrain("daemon", "stop");
    await disconnected;
    const error = await rejection(connection.connect(false));
    assert.equal(error.kind, "daemon_unavailable");
    const reconnected = waitFor("reconnected", (c) => connection.onStateChange(c), () => connection.state.status === "connected");
    await daemon.rtrain("daemon", "start");
    await reconnected;
    const after = await connection.request("daemon/info");
    assert.notEqual(after.pid, before.pid);
  });
});
