"""Benchmark 7: one large file (1 GB by default) both ways, and a fetch cut at half.

- **Both ways:** the transfer benchmark's rows (bench/transfer.py) at this size, on the
  direct link and through the delay proxy: rtrain's `run/start` and `run/fetch` against scp
  as a user types it and scp over an open ControlMaster, interleaved.
- **Resume:** `run/fetch` of the file on the direct link, cut by Ctrl-C (the client's cancel)
  once half of it has arrived, then fetched again: how many bytes the second fetch moved (its
  `sentBytes`), against the half that was left. rtrain keeps the bytes a piece in flight had
  landed once the far side's hash of them agrees (docs/architecture.md, "Resume inside a
  piece").
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from typing import Any

from bench.processes import CommandFailed
from bench.transfer import LinkTransfer, TransferBench
from bench.world import BenchWorld


@dataclass
class CutFetch:
    size_bytes: int
    cut_at_bytes: int  # what had arrived when Ctrl-C was pressed
    sent_again_bytes: int  # what the next fetch moved
    again_s: float

    @property
    def moved_again(self) -> float:
        """The second fetch's bytes as a share of the file."""
        return self.sent_again_bytes / self.size_bytes


@dataclass
class BigFile:
    size_bytes: int
    transfer: list[LinkTransfer]
    cut: CutFetch | None


def run_big_file(
    world: BenchWorld, size_bytes: int, reps: int, delays: list[float | None]
) -> BigFile:
    bench = TransferBench(world, size_bytes, reps, name="big")
    transfer = bench.run([world.link(delay) for delay in delays])
    return BigFile(size_bytes, transfer, _cut_fetch(world, bench))


def _cut_fetch(world: BenchWorld, bench: TransferBench) -> CutFetch:
    from rtrain.client.errors import Interrupted

    assert world.daemon is not None
    alias = world.link(None).alias
    client = world.daemon.client()
    run_id = f"cut-{alias}"
    landing = world.local_dir("cut-fetch")
    params = {"host": alias, "runId": run_id, "path": bench.payload.name, "dest": str(landing)}
    try:
        client.request("run/start", {
            "host": alias, "runId": run_id, "config": str(bench.config),
            "dataset": str(bench.payload), "gpus": 0, "workdir": world.workdir,
            "command": ["true"],
        })  # fmt: skip
        cut_at: list[int] = []

        def press_ctrl_c_at_half(method: str, progress: Any) -> None:
            done = progress.value.done_bytes
            if method == "$/progress" and not cut_at and done >= bench.size // 2:
                cut_at.append(done)
                raise KeyboardInterrupt

        try:
            client.request(
                "run/fetch",
                {**params, "progressToken": 1},
                on_notification=press_ctrl_c_at_half,
                cancel_on_interrupt=True,
            )
        except Interrupted as interrupted:
            if interrupted.result is not None:
                raise CommandFailed("the fetch finished before Ctrl-C reached it") from None
        if not cut_at:
            raise CommandFailed("the fetch never reported half of the file")
        started = time.perf_counter()
        again = client.request("run/fetch", params)
        seconds = time.perf_counter() - started
        if not all(f.verified for f in again.files) or again.total_bytes != bench.size:
            raise CommandFailed("the resumed fetch did not verify the whole file")
        return CutFetch(bench.size, cut_at[0], again.sent_bytes, seconds)
    finally:
        client.close()
        shutil.rmtree(landing, ignore_errors=True)
        world.far_side('rm -rf -- "$1"', f"{world.workdir_abs}/{run_id}")
