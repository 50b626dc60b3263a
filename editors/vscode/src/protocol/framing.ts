// LSP base-protocol framing, as the daemon speaks it:
// `Content-Length: N\r\n` (optional `Content-Type`), a blank line, then N bytes of UTF-8 JSON.

export const DEFAULT_MAX_FRAME = 64 * 1024 * 1024;
// A header block longer than this is not a real peer; refuse before buffering more.
const MAX_HEADER_BYTES = 8 * 1024;
const HEADER_END = Buffer.from("\r\n\r\n", "ascii");

export class FramingError extends Error {
  override name = "FramingError";
}

export function encodeFrame(body: string): Buffer {
  const payload = Buffer.from(body, "utf8");
  return Buffer.concat([Buffer.from(`Content-Length: ${payload.length}\r\n\r\n`, "ascii"), payload]);
}

/** Incremental parser: `push(chunk)` returns the bodies of every frame `chunk` completed. */
export class FrameDecoder {
  private buffer: Buffer = Buffer.alloc(0);
  private bodyLength: number | null = null;

  constructor(readonly maxFrame: number = DEFAULT_MAX_FRAME) {}

  /** Bytes received that are not yet part of a complete frame. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Throws FramingError for a malformed header or an oversized frame; the stream is then unusable. */
  push(chunk: Buffer): string[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const bodies: string[] = [];
    for (;;) {
      if (this.bodyLength === null) {
        const end = this.buffer.indexOf(HEADER_END);
        if (end < 0) {
          if (this.buffer.length > MAX_HEADER_BYTES) throw new FramingError("header block too long");
          return bodies;
        }
        this.bodyLength = this.parseHeaders(this.buffer.subarray(0, end));
        this.buffer = this.buffer.subarray(end + HEADER_END.length);
      }
      if (this.buffer.length < this.bodyLength) return bodies;
      bodies.push(this.buffer.subarray(0, this.bodyLength).toString("utf8"));
      this.buffer = this.buffer.subarray(this.bodyLength);
      this.bodyLength = null;
    }
  }

  private parseHeaders(block: Buffer): number {
    let length: number | null = null;
    for (const line of block.toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon < 0) throw new FramingError(`malformed header line ${JSON.stringify(line)}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-length") {
        if (!/^\d+$/.test(value)) throw new FramingError(`Content-Length is not a number: ${JSON.stringify(value)}`);
        length = Number(value);
      } else if (name === "content-type" && !/utf-?8/i.test(value)) {
        throw new FramingError(`unsupported Content-Type ${JSON.stringify(value)}`);
      }
    }
    if (length === null) throw new FramingError("missing Content-Length header");
    if (length > this.maxFrame) {
      throw new FramingError(`frame of ${length} bytes exceeds the limit of ${this.maxFrame}`);
    }
    return length;
  }
}
