"""run/fetch over ssh with the far side hashing as it sends: every file still comes home
verified, and a file that is being written while it is fetched never lands under its name."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tests.operations.harness import Ops

# Outputs whose bytes look like the lines send.sh says after a file (they travel on another
# stream, so these are only bytes), an empty one, then a log the trainer keeps appending to.
WRITES_THEN_APPENDS = """
import hashlib, os, time
os.makedirs("out", exist_ok=True)
open("out/empty.bin", "wb").close()
with open("out/looks-like-a-verdict.txt", "wb") as f:
    f.write(b"sent\\t" + hashlib.sha256(b"x").hexdigest().encode() + b"\\n")
    f.write(b"changed\\tout/looks-like-a-verdict.txt\\nerror\\tunreadable\\tx\\n")
with open("out/weights.bin", "wb") as f:
    f.write(os.urandom(3 * 1024 * 1024 + 5))
open("outputs-written", "w").close()
with open("growing.log", "ab") as log:
    step = 0
    while True:
        log.write(b"step %d\\n" % step)
        log.flush()
        step += 1
        time.sleep(0.001)
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def start_writer(ops: Ops) -> str:
    run_id = ops.new_run_id("hashside")
    ops.start(WRITES_THEN_APPENDS, run_id=run_id)
    ops.wait_file(ops.far_run_dir(run_id) / "outputs-written", lambda _text: True)
    ops.wait_file(ops.far_run_dir(run_id) / "growing.log")
    return run_id


def fetch_params(run_id: str, path: str, dest: Path) -> dict[str, Any]:
    return {"host": "plain", "runId": run_id, "path": path, "dest": str(dest)}


def test_each_file_comes_home_with_the_sha256_of_the_real_file(ops: Ops) -> None:
    run_id = start_writer(ops)
    dest = ops.tmp / "home"

    result = ops.request("run/fetch", fetch_params(run_id, "out", dest))

    far = ops.far_run_dir(run_id) / "out"
    names = ["empty.bin", "looks-like-a-verdict.txt", "weights.bin"]
    by_name = {Path(f.local_path).name: f for f in result.files}
    assert sorted(by_name) == names
    for name in names:
        fetched = by_name[name]
        assert fetched.verified
        assert fetched.sha256 == sha256(far / name), name
        assert fetched.size == (far / name).stat().st_size
        assert (dest / "out" / name).read_bytes() == (far / name).read_bytes()
    assert by_name["empty.bin"].sha256 == hashlib.sha256(b"").hexdigest()
    assert sorted(p.name for p in (dest / "out").iterdir()) == names


def test_a_file_written_to_while_it_is_fetched_is_refused_and_not_kept(ops: Ops) -> None:
    run_id = start_writer(ops)
    dest = ops.tmp / "home"
    dest.mkdir()

    error = ops.error("run/fetch", fetch_params(run_id, "growing.log", dest))

    assert error.kind == "transfer_failed"
    assert "changed while fetching" in error.message
    assert "nothing was written under its name" in error.message
    # Neither the file nor a temporary copy of it stays behind.
    assert list(dest.iterdir()) == []
    # The same run's files that hold still come home meanwhile.
    [fetched] = ops.request("run/fetch", fetch_params(run_id, "out/weights.bin", dest)).files
    assert fetched.sha256 == sha256(ops.far_run_dir(run_id) / "out" / "weights.bin")
