import * as assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CarriageReturns } from "../src/log/carriageReturns";
import { chunkBytes, LogCursor } from "../src/log/logCursor";
import type { LogChunk } from "../src/protocol/generated";

const chunk = (offset: number, bytes: Buffer, extra: Partial<LogChunk> = {}): LogChunk => {
  const text = bytes.toString("utf8");
  const valid = Buffer.from(text, "utf8").equals(bytes);
  return {
    host: "h",
    runId: "r",
    offset,
    nextOffset: offset + bytes.length,
    text,
    ...(valid ? {} : { base64: bytes.toString("base64") }),
    ...extra,
  };
};

describe("log chunks", () => {
  it("takes the exact bytes from base64 when the daemon flagged them", () => {
    const bytes = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]);
    const c = chunk(0, bytes);
    assert.ok(c.base64 !== undefined);
    assert.ok(chunkBytes(c).equals(bytes));
    assert.ok(chunkBytes(chunk(0, Buffer.from("plain\n"))).equals(Buffer.from("plain\n")));
  });

  it("joins a character split between two chunks and skips what it already showed", () => {
    const euro = Buffer.from("a€b", "utf8"); // € is 3 bytes
    const cursor = new LogCursor();
    assert.equal(cursor.accept(chunk(0, euro.subarray(0, 2))).text, "a");
    assert.equal(cursor.accept(chunk(2, euro.subarray(2))).text, "€b");
    assert.equal(cursor.accept(chunk(0, euro)).text, "");
    assert.equal(cursor.nextOffset, euro.length);
  });
});

describe("carriage returns in an output channel", () => {
  it("shows one line per bar state a chunk ends in, not one per redraw", () => {
    const bars = new CarriageReturns();
    let shown = bars.push("loading\n\r 1/10\r 2/10\r 3/10");
    shown += bars.push("\r 4/10\r 5/10");
    shown += bars.push("\r10/10\nsaved\n");
    assert.equal(shown, "loading\n 3/10\n 5/10\n10/10\nsaved\n");
  });

  it("continues a line the last chunk left open, and redraws after a trailing return", () => {
    const bars = new CarriageReturns();
    let shown = bars.push("epoch 1: ");
    shown += bars.push("50%\r");
    shown += bars.push("epoch 1: 100%\n");
    assert.equal(shown, "epoch 1: 50%\nepoch 1: 100%\n");
  });

  it("leaves ordinary lines and Windows line ends alone", () => {
    const bars = new CarriageReturns();
    assert.equal(bars.push("a\r\nb\n"), "a\nb\n");
    assert.equal(bars.push("c\n"), "c\n");
  });
});
