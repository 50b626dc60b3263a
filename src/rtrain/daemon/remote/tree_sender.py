# The Python half of send_tree.sh: with python3 on the host, one interpreter sends every file
# of a batch, reading each once (it is hashed as it is sent) and taking its state just before
# and after, instead of a shell loop over the names and three more passes of batch tools.
# Run as `python3 -c PROGRAM RUN_DIR REAL_RUN E_OUTSIDE E_NOT_FOUND`, stdin the names, one a
# line; it prints what send_tree.sh prints (see there). The daemon sends it inside that script
# as one single-quoted sh word (daemon/remote/__init__.py), so it holds no single quote.
# Python 3 and its standard library only.
from __future__ import annotations

import hashlib
import os
import sys
from typing import BinaryIO

CHUNK = 1 << 20


def refuse(code: int, kind: str, name: str) -> None:
    sys.stderr.write(f"error\t{kind}\t{flat(name)}\n")
    sys.stderr.flush()
    sys.exit(code)


def flat(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")


def bad_name(name: str) -> bool:
    parts = name.split("/")
    return name.startswith("/") or any(p in ("", ".", "..") for p in parts)


def state(path: str) -> str:
    """The file state: device, inode, size, mtime in ns; `-` for a file that cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns}"


def checked(run_dir: str, real_run: str, outside: int, not_found: int) -> list[str]:
    """The real path of each name on stdin; the first that leaves the run or is not a regular
    file ends the script before any byte is sent."""
    reals = []
    for line in sys.stdin.buffer:
        rel = line.rstrip(b"\n").decode("utf-8", "surrogateescape")
        if not rel:
            continue
        if bad_name(rel):
            refuse(outside, "path_outside_run", rel)
        path = os.path.join(run_dir, rel)
        if not os.path.isfile(path):
            refuse(not_found, "not_a_file", rel)
        real = os.path.realpath(path)
        if not real.startswith(real_run + "/"):
            refuse(outside, "path_outside_run", real[len(real_run) + 1 :] or rel)
        reals.append(real)
    return reals


def send(path: str, out: BinaryIO) -> str:
    """The bytes of the file onto `out`; their sha256 (`-` when it could not be read to its end:
    the stream is then short, which the hashes of the files after it tell)."""
    write = out.write
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            block = f.read(CHUNK)
            while block:
                digest.update(block)
                write(block)
                block = f.read(CHUNK)
    except OSError:
        return "-"
    return digest.hexdigest()


def main(argv: list[str]) -> None:
    run_dir, real_run = argv[1], argv[2]
    reals = checked(run_dir, real_run, int(argv[3]), int(argv[4]))
    out = sys.stdout.buffer
    before, digests, after = [], [], []
    for real in reals:
        before.append(state(real))
        digests.append(send(real, out))
        after.append(state(real))
    out.flush()
    lines = [f"state\t{s}\n" for s in before]
    lines += [f"sha256\t{d}\n" for d in digests]
    lines += [f"after\t{s}\n" for s in after]
    lines.append(f"sent\t{len(reals)}\n")
    sys.stderr.write("".join(lines))


if __name__ == "__main__":
    main(sys.argv)
