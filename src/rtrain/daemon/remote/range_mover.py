# The Python half of send_range.sh and put_range.sh: with python3 on the host, one process
# moves the bytes of a piece and hashes them as they pass, instead of a pipeline of tail, head,
# tee, dd and a hasher that carries every byte through three more pipes.
#   python3 -c PROGRAM send PATH OFFSET LENGTH  LENGTH bytes of PATH from OFFSET to stdout;
#                                               their sha256 on fd 3 after the last one
#   python3 -c PROGRAM put PATH OFFSET LENGTH   stdin, to its end, written at OFFSET of PATH
#                                               (no larger than LENGTH); its sha256 on stdout
#   python3 -c PROGRAM puts PATH MARKS OFFSET LENGTH SHA256 [OFFSET LENGTH SHA256]...
#       consecutive pieces on stdin, back to back (the last one to the end of stdin), each
#       written at its offset and hashed; a piece that hashes to its SHA256 gets its marker
#       (MARKS/OFFSET-LENGTH, holding that digest) and a line `piece OFFSET LENGTH`; the first
#       that does not ends it: `mismatch DIGEST`, exit 3
# A read or write that fails prints the words of the system (on fd 3 for send, where the bytes
# go to stdout; else on stdout) and exits 1. The daemon
# sends it inside those scripts as one single-quoted sh word (daemon/remote/__init__.py), so
# it holds no single quote. Python 3 and its standard library only.
from __future__ import annotations

import hashlib
import os
import sys

CHUNK = 1 << 20


def send(path: str, offset: int, length: int) -> str:
    digest = hashlib.sha256()
    source = os.open(path, os.O_RDONLY)
    at, end = offset, offset + length
    while at < end:
        block = os.pread(source, min(CHUNK, end - at), at)
        if not block:
            break  # the file shrank: its state check after says so
        digest.update(block)
        view = memoryview(block)
        while view:
            view = view[os.write(1, view) :]
        at += len(block)
    return digest.hexdigest()


def put(path: str, offset: int, length: int) -> str:
    digest = hashlib.sha256()
    sink = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    buffer = bytearray(CHUNK)
    # Buffered: each read fills the whole block, so each write is a large one.
    source = open(0, "rb", closefd=False)
    at, end = offset, offset + length
    while True:
        count = source.readinto(buffer)
        if not count:
            break
        block = memoryview(buffer)[:count]
        digest.update(block)
        if at + count > end:
            # More than the piece: hashed, not written, so the digest tells and no byte lands
            # past the piece.
            at = end + 1
            continue
        written = 0
        while written < count:
            written += os.pwrite(sink, block[written:], at + written)
        at += count
    os.close(sink)
    return digest.hexdigest()


def puts(path: str, marks: str, triples: list[str]) -> int:
    """Several pieces in one stream: each read exactly (the last one to the end), so a piece
    never takes bytes of the next one; each marked as soon as it verified."""
    sink = os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    pieces = [triples[i : i + 3] for i in range(0, len(triples), 3)]
    for index, (offset_word, length_word, expected) in enumerate(pieces):
        offset, length = int(offset_word), int(length_word)
        marker = f"{marks}/{offset}-{length}"
        # Its bytes are about to be written again: no marker vouches for them until they verify.
        if os.path.exists(marker):
            os.unlink(marker)
        last = index == len(pieces) - 1
        digest = hashlib.sha256()
        at, end = offset, offset + length
        while True:
            want = min(CHUNK, end - at) if at < end else (CHUNK if last else 0)
            if want == 0:
                break
            count = os.readv(0, [view[:want]])
            if not count:
                break
            digest.update(view[:count])
            if at + count > end:
                at = end + 1  # more than the piece: hashed, never written, so the digest tells
                continue
            written = 0
            while written < count:
                written += os.pwrite(sink, view[written:count], at + written)
            at += count
        found = digest.hexdigest()
        if found != expected:
            os.close(sink)
            os.write(1, f"mismatch\t{found}\n".encode())
            return 3
        with open(marker, "w") as note:
            note.write(expected + "\n")
        os.write(1, f"piece\t{offset}\t{length}\n".encode())
    os.close(sink)
    return 0


def main(argv: list[str]) -> None:
    if argv[1] == "puts":
        try:
            sys.exit(puts(argv[2], argv[3], argv[4:]))
        except OSError as error:
            os.write(1, f"{error.strerror or error} ({error.filename or argv[2]})\n".encode())
            sys.exit(1)
    what, path, offset, length = argv[1], argv[2], int(argv[3]), int(argv[4])
    said = 3 if what == "send" else 1
    try:
        digest = send(path, offset, length) if what == "send" else put(path, offset, length)
        os.write(said, (digest + "\n").encode())
    except OSError as error:
        os.write(said, f"{error.strerror or error} ({error.filename or path})\n".encode())
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
