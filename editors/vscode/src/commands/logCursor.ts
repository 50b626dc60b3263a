// Where a tail stands in a run's log, by byte offset: which part of each `run/log` chunk is
// new. A resumed tail asks from `nextOffset`, and a chunk it already showed is dropped.

import type { LogChunk } from "../protocol/generated";

export class LogCursor {
  nextOffset = 0;

  /** The text of `chunk` not shown yet ("" when none), and a note when the log restarted. */
  accept(chunk: LogChunk): { text: string; restarted: boolean } {
    const restarted = chunk.rotated === true;
    if (restarted) this.nextOffset = 0;
    if (chunk.nextOffset <= this.nextOffset) return { text: "", restarted };
    const skip = Math.max(0, this.nextOffset - chunk.offset);
    const text = skip > 0 ? Buffer.from(chunk.text, "utf8").subarray(skip).toString("utf8") : chunk.text;
    this.nextOffset = chunk.nextOffset;
    return { text, restarted };
  }
}
