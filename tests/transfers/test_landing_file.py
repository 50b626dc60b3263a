"""Where a striped fetch's pieces land: byte-exact whatever their offsets, written past the
page cache where the filesystem takes it (a large fetch does not push the machine's own
files out of memory), and through the cache where it does not."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
from pathlib import Path

import pytest

from rtrain.daemon.transfer.landing_file import BLOCK, LandingFile
from tests.operations.harness import Ops
from tests.required_tools import need
from tests.transfers.test_engine import STRIPED, fetch, finished_run, patterned, sha256, write_far

MIB = 1024 * 1024


def _land(path: Path, data: bytes, starts: list[int], *, direct: bool) -> None:
    """`data` written as pieces from each of `starts` on, two pieces' bytes interleaved in
    uneven blocks, as two channels deliver them."""
    path.write_bytes(b"")
    landing = LandingFile(path)
    if not direct:
        landing.direct = None  # as on a platform without O_DIRECT
    try:
        bounds = [*starts, len(data)]
        pieces = [(bounds[i], bounds[i + 1]) for i in range(len(starts))]
        stages = [(landing.stage(start), start, end) for start, end in pieces]
        at = {start: start for start, _end in pieces}
        chooser = random.Random(7)
        while any(at[start] < end for _stage, start, end in stages):
            stage, start, end = chooser.choice([s for s in stages if at[s[1]] < s[2]])
            count = min(end - at[start], chooser.randint(1, 3 * BLOCK // 2))
            stage.add(memoryview(data)[at[start] : at[start] + count])
            at[start] += count
            if at[start] == end:
                stage.flush()
                assert stage.landed == end
        for stage, _start, _end in stages:
            stage.close()
    finally:
        landing.close()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "through the cache"])
def test_pieces_at_any_offset_land_byte_exact(tmp_path: Path, direct: bool) -> None:
    data = random.Random(1).randbytes(5 * MIB + 4321)
    # A piece from a MiB boundary, one from the middle of a page (a resumed piece), one from
    # a page boundary inside a MiB, and a tail shorter than a page.
    starts = [0, MIB + 777, 3 * MIB + 8192, 5 * MIB + 4000]
    target = tmp_path / "landed.bin"
    _land(target, data, starts, direct=direct)
    assert target.read_bytes() == data


def test_a_striped_fetch_leaves_the_page_cache_alone(ops: Ops) -> None:
    fincore = need("fincore")
    dest = ops.tmp / "home"
    dest.mkdir()
    probe = dest / "probe"
    probe.write_bytes(b"")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_DIRECT))
    except (OSError, AttributeError) as error:
        pytest.skip(f"the filesystem of {dest} takes no direct writes ({error})")
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    run_id = finished_run(ops)
    data = patterned(STRIPED, salt=3)
    write_far(ops, run_id, "model.bin", data)
    result = fetch(ops, run_id, "model.bin", dest)
    landed = dest / "model.bin"
    cached = subprocess.run(
        [fincore, "--bytes", "--noheadings", "--output", "RES", str(landed)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    # Only the last partial page went through the cache (nothing else of 64 MiB did)...
    assert int(cached.stdout.split()[0]) <= 64 * 1024, cached.stdout
    # ...and the copy is whole, its sha256 the far file's.
    assert landed.read_bytes() == data
    assert result.files[0].sha256 == sha256(data)
