"""LSP base-protocol framing: `Content-Length: N\r\n`, optional headers, blank line, N bytes.

Pure bytes in, frames out: nothing here touches a socket.
"""

from __future__ import annotations

from .errors import PARSE_ERROR, RemoteProtocolError, RpcError

DEFAULT_MAX_FRAME = 64 * 1024 * 1024
# A header block longer than this is not a real client; refuse before buffering more.
MAX_HEADER_BYTES = 8 * 1024
_HEADER_END = b"\r\n\r\n"


def encode_frame(body: bytes) -> bytes:
    """One frame holding `body` (UTF-8 JSON)."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class FrameReader:
    """Incremental frame parser: `feed(data)` returns every frame completed by `data`.

    Raises RemoteProtocolError for a malformed header or a frame over `max_frame` bytes;
    the declared length is checked before any body is buffered, so a huge length costs nothing.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._body_length: int | None = None

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Frames completed by `data`. On a framing error, raises `FramingError` whose
        `frames` holds the frames that were complete before the bad header."""
        self._buffer += data
        frames: list[bytes] = []
        try:
            self._take_frames(frames)
        except RemoteProtocolError as error:
            raise FramingError(str(error), error.reply, frames) from None
        return frames

    def _take_frames(self, frames: list[bytes]) -> None:
        while True:
            if self._body_length is None:
                end = self._buffer.find(_HEADER_END)
                if end < 0:
                    if len(self._buffer) > MAX_HEADER_BYTES:
                        raise _framing_error("header block too long")
                    return
                self._body_length = self._parse_headers(bytes(self._buffer[:end]))
                del self._buffer[: end + len(_HEADER_END)]
            if len(self._buffer) < self._body_length:
                return
            frames.append(bytes(self._buffer[: self._body_length]))
            del self._buffer[: self._body_length]
            self._body_length = None

    def _parse_headers(self, block: bytes) -> int:
        try:
            text = block.decode("ascii")
        except UnicodeDecodeError:
            raise _framing_error("header is not ASCII") from None
        length: int | None = None
        for line in text.split("\r\n"):
            name, sep, value = line.partition(":")
            if not sep:
                raise _framing_error(f"malformed header line {line!r}")
            name = name.strip().lower()
            value = value.strip()
            if name == "content-length":
                if not value.isdigit():
                    raise _framing_error(f"Content-Length is not a number: {value!r}")
                length = int(value)
            elif name == "content-type":
                charset = _charset(value)
                # No charset is LSP's default: UTF-8.
                if charset is not None and charset not in ("utf-8", "utf8"):
                    raise _framing_error(
                        f"unsupported charset {charset!r} in Content-Type {value!r} "
                        "(the body must be UTF-8)"
                    )
        if length is None:
            raise _framing_error("missing Content-Length header")
        if length > self.max_frame:
            raise _framing_error(f"frame of {length} bytes exceeds the limit of {self.max_frame}")
        return length


def _charset(content_type: str) -> str | None:
    """The `charset` parameter of a Content-Type value, lower-cased, or None."""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


class FramingError(RemoteProtocolError):
    def __init__(self, message: str, reply: RpcError | None, frames: list[bytes]) -> None:
        super().__init__(message, reply)
        self.frames = frames


def _framing_error(why: str) -> RemoteProtocolError:
    return RemoteProtocolError(why, RpcError(PARSE_ERROR, f"Framing error: {why}."))
