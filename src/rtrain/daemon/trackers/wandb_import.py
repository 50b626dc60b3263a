"""`python -m rtrain.daemon.trackers.wandb_import WANDB_DIR STATE SOURCE`: send what is new in
a copy of a run's W&B offline runs (`wandb/offline-run-*/run-*.wandb`) to this machine's W&B,
with `wandb sync` and this machine's credentials (sync.py runs it; docs/trackers.md).

A `.wandb` file is a transaction log that only grows: W&B's records (protobuf), in LevelDB's
log format (32 KiB blocks of checksummed chunks) after a 7-byte header. A copy taken while the
trainer writes may end in a record half written; only whole records count. What was sent is a
count of records per file (the state file, JSON, replaced whole). What is new goes as a
fragment: a `.wandb` file of its own holding the run's header and run records and the new
records, synced by `wandb sync --id RUN` with `WANDB_RESUME=allow`, which is how W&B itself
sends a resumed run: its server says how many history rows it holds, and the new rows follow
them. Nothing new: no `wandb sync` at all. Exit 0 with one summary line; otherwise the reason
on stderr.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

HEADER = b":W&B\xe1\xbe\x00"  # magic, then the format's version
BLOCK = 32 * 1024
CHUNK_HEADER = struct.Struct("<IHB")  # CRC-32 of kind + data, length, kind
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
SYNC_TIMEOUT_S = 540  # under the daemon's limit for the whole import
# The records a fragment starts with, as the file does: W&B reads the run from them.
OPENING = ("header", "run")


def read_records(data: bytes) -> list[bytes]:
    """The whole records of a `.wandb` file, in order, up to the first one not (yet) whole."""
    if not data.startswith(HEADER):
        return []
    records: list[bytes] = []
    pending = b""
    pos = len(HEADER)
    while pos + CHUNK_HEADER.size <= len(data):
        room = BLOCK - pos % BLOCK
        if room < CHUNK_HEADER.size:
            pos += room  # a block's tail too short for a chunk is padding
            continue
        crc, length, kind = CHUNK_HEADER.unpack_from(data, pos)
        if kind == 0 and length == 0:
            pos += room  # zeros: the rest of the block is padding
            continue
        end = pos + CHUNK_HEADER.size + length
        chunk = data[pos + CHUNK_HEADER.size : end]
        if end > len(data) or zlib.crc32(bytes([kind]) + chunk) != crc:
            break  # being written
        pos = end
        if kind == FULL:
            records.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            records.append(pending + chunk)
            pending = b""
    return records


def write_records(records: list[bytes]) -> bytes:
    """A `.wandb` file of `records` (what `read_records` reads back)."""
    out = bytearray(HEADER)
    for record in records:
        rest, first = record, True
        while True:
            room = BLOCK - len(out) % BLOCK
            if room < CHUNK_HEADER.size:
                out += bytes(room)
                continue
            chunk, rest = rest[: room - CHUNK_HEADER.size], rest[room - CHUNK_HEADER.size :]
            kind = (FULL if not rest else FIRST) if first else (LAST if not rest else MIDDLE)
            out += CHUNK_HEADER.pack(zlib.crc32(bytes([kind]) + chunk), len(chunk), kind)
            out += chunk
            first = False
            if not rest:
                break
    return bytes(out)


def main(argv: list[str]) -> int:
    wandb_dir, state_path, source = Path(argv[0]), Path(argv[1]), argv[2]
    if importlib.util.find_spec("wandb") is None:
        print(f"wandb is not installed for {sys.executable}: pip install wandb", file=sys.stderr)
        return 3
    state: dict[str, int] = {}
    if state_path.exists():
        state = json.loads(state_path.read_text())
    fragments = state_path.parent / "wandb-fragments"
    runs = records = 0
    try:
        for log in sorted(wandb_dir.glob("offline-run-*/run-*.wandb")):
            key = f"{log.parent.name}/{log.name}"
            sent = state.get(key, 0)
            whole = read_records(log.read_bytes())
            if len(whole) <= sent:
                continue
            _sync_fragment(log, whole, sent, fragments / log.parent.name)
            state[key] = len(whole)
            runs += 1
            records += len(whole) - sent
    finally:
        partial = state_path.with_name(state_path.name + ".tmp")
        partial.write_text(json.dumps(state))
        os.replace(partial, state_path)
    if not runs:
        print("nothing new")
    else:
        print(f"{records} new records of {runs} W&B runs from {source}")
    return 0


def _sync_fragment(log: Path, whole: list[bytes], sent: int, into: Path) -> None:
    """`wandb sync` of the records of `log` past the first `sent`, as a resumed run."""
    # Only now, and by name: seconds to import, untyped, and not needed for nothing new.
    internal: Any = importlib.import_module("wandb.proto.wandb_internal_pb2")
    parsed = []
    for raw in whole:
        record = internal.Record()
        record.ParseFromString(raw)
        parsed.append(record)
    opening = [r for r in parsed[:sent] if r.WhichOneof("record_type") in OPENING]
    run = next((r.run for r in parsed if r.WhichOneof("record_type") == "run"), None)
    if run is None:
        raise SystemExit(f"{log}: no run record yet")  # not a W&B run file: nothing to send
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    fragment = into / log.name
    fragment.write_bytes(write_records([r.SerializeToString() for r in opening] + whole[sent:]))
    if (log.parent / "files").is_dir():
        (into / "files").symlink_to((log.parent / "files").resolve())  # what it uploads
    env = {**os.environ, "WANDB_RESUME": "allow", "WANDB_SILENT": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "wandb", "sync", "--include-synced", "--id", run.run_id, str(into)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=SYNC_TIMEOUT_S,
    )
    said = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
    if done.returncode != 0 or said:
        last = (said or (done.stdout + done.stderr).strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"wandb sync of {log.parent.name} failed: {last.strip()}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
