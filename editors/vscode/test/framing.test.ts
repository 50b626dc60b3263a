import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeFrame, FrameDecoder, FramingError } from "../src/protocol/framing";

const frame = (body: string): Buffer => encodeFrame(body);

describe("framing", () => {
  it("round-trips a body, counting bytes not characters", () => {
    const body = JSON.stringify({ text: "loss 0.25 — ünïcödé ✓" });
    const bytes = frame(body);
    assert.match(bytes.toString("latin1"), new RegExp(`^Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`));
    assert.deepEqual(new FrameDecoder().push(bytes), [body]);
  });

  it("reassembles frames split at every possible byte, multibyte characters included", () => {
    const bodies = ['{"a":"✓✓"}', '{"b":2}', "[]"];
    const stream = Buffer.concat(bodies.map(frame));
    for (let cut = 1; cut < stream.length; cut++) {
      const decoder = new FrameDecoder();
      const got = [...decoder.push(stream.subarray(0, cut)), ...decoder.push(stream.subarray(cut))];
      assert.deepEqual(got, bodies, `split at byte ${cut}`);
      assert.equal(decoder.pending, 0);
    }
  });

  it("reads a stream fed one byte at a time", () => {
    const stream = Buffer.concat([frame('{"x":1}'), frame('{"y":"é"}')]);
    const decoder = new FrameDecoder();
    const got: string[] = [];
    for (const byte of stream) got.push(...decoder.push(Buffer.from([byte])));
    assert.deepEqual(got, ['{"x":1}', '{"y":"é"}']);
  });

  it("returns every frame of a chunk that holds several, and keeps the partial rest", () => {
    const stream = Buffer.concat([frame("{}"), frame("[1]"), frame('{"partial":true}').subarray(0, 10)]);
    const decoder = new FrameDecoder();
    assert.deepEqual(decoder.push(stream), ["{}", "[1]"]);
    assert.equal(decoder.pending, 10);
  });

  it("accepts a UTF-8 Content-Type header in any case", () => {
    const bytes = Buffer.from('Content-Type: application/vscode-jsonrpc; charset=UTF8\r\ncontent-length: 2\r\n\r\n{}');
    assert.deepEqual(new FrameDecoder().push(bytes), ["{}"]);
  });

  it("refuses a frame over the limit before reading its body", () => {
    const decoder = new FrameDecoder(1024);
    assert.throws(() => decoder.push(Buffer.from("Content-Length: 1025\r\n\r\n")), FramingError);
  });

  it("refuses malformed headers", () => {
    for (const header of ["Content-Length: ten", "Content-Type: text/plain; charset=latin1\r\nContent-Length: 2", "no colon here", "X-Other: 1"]) {
      assert.throws(() => new FrameDecoder().push(Buffer.from(`${header}\r\n\r\n{}`)), FramingError, header);
    }
    assert.throws(() => new FrameDecoder().push(Buffer.alloc(9000, 0x41)), /header block too long/);
  });
});
