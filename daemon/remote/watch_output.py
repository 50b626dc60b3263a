"""The output of watch.sh, decoded: run rows, nvidia-smi's lines, and raw slices of files.

Slices carry a log's raw bytes, which may hold anything, a forged `run` line included; so
machine lines are read only before the first slice, and each slice is taken by its byte
count, never by looking for line ends inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Slice:
    run_id: str
    name: str  # "log" (train.log) or "jsonl" (metrics.jsonl)
    start: int
    size: int  # of the whole file when it was read
    data: bytes


@dataclass
class WatchOutput:
    runs: list[list[str]] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)  # nvidia-smi's CSV, one line per GPU
    apps: list[tuple[str, str]] = field(default_factory=list)  # (run id or "-", CSV)
    slices: list[Slice] = field(default_factory=list)
    gpus_queried: bool = False


def decode_watch(stdout: bytes) -> WatchOutput:
    """What watch.sh printed; a slice cut short (the output ended early) is dropped."""
    out = WatchOutput()
    at = 0
    while at < len(stdout):
        end = stdout.find(b"\n", at)
        if end < 0:
            break
        key, *fields = stdout[at:end].decode(errors="replace").split("\t")
        at = end + 1
        if key == "slice":
            if len(fields) < 5 or not all(f.isdigit() for f in fields[2:5]):
                break
            start, count, size = (int(f) for f in fields[2:5])
            data = stdout[at : at + count]
            if len(data) < count:
                break
            out.slices.append(Slice(fields[0], fields[1], start, size, data))
            at += count + 1  # and the newline after the bytes
        elif out.slices:
            break  # nothing but slices may follow a slice
        elif key == "run":
            out.runs.append(fields)
        elif key == "gpu" and fields:
            out.gpus.append(fields[0])
        elif key == "app" and len(fields) >= 2:
            out.apps.append((fields[0], fields[1]))
    return out
