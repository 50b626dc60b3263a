// Where a tail stands in a run's log, by byte offset: which part of each `run/log` chunk is
// new. A resumed tail asks from `nextOffset`, and a chunk it already showed is dropped.

import type { LogChunk } from "../protocol/generated";

/** The exact bytes a chunk carries: `base64` when the daemon sent it, else `text` as UTF-8. */
export function chunkBytes(chunk: LogChunk): Buffer {
  return typeof chunk.base64 === "string" ? Buffer.from(chunk.base64, "base64") : Buffer.from(chunk.text, "utf8");
}

export class LogCursor {
  nextOffset = 0;
  /** Bytes of a UTF-8 character that a chunk's end cut off, waiting for the rest. */
  private partial: Buffer = Buffer.alloc(0);

  /** The text of `chunk` not shown yet ("" when none), and a note when the log restarted. */
  accept(chunk: LogChunk): { text: string; restarted: boolean } {
    const restarted = chunk.rotated === true;
    if (restarted) {
      this.nextOffset = 0;
      this.partial = Buffer.alloc(0);
    }
    if (chunk.nextOffset <= this.nextOffset) return { text: "", restarted };
    const skip = Math.max(0, this.nextOffset - chunk.offset);
    if (skip > 0) this.partial = Buffer.alloc(0);
    const bytes = Buffer.concat([this.partial, chunkBytes(chunk).subarray(skip)]);
    const whole = wholeCharacters(bytes);
    this.partial = Buffer.from(bytes.subarray(whole));
    this.nextOffset = chunk.nextOffset;
    return { text: bytes.subarray(0, whole).toString("utf8"), restarted };
  }
}

/** How many bytes of `bytes` end on a character boundary: all but a cut-off UTF-8 start. */
function wholeCharacters(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back];
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}
