"""The small files of a code directory (or a dataset directory) go to the host in one stream,
not a channel per file, each verified by its own sha256 there, against the real sshd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.operations.harness import Ops
from tests.transfers.test_engine import patterned
from tests.transfers.test_tree_stream import ODD_NAMES, sessions_in


def code_tree(root: Path, count: int) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for n in range(count):
        name = ODD_NAMES[n] if n < len(ODD_NAMES) else f"pkg{n % 13}/m{n:04d}.py"
        files[name] = b"" if name == "empty" else patterned((n * 1291) % 70000, salt=n)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "nothing here").mkdir()
    return files


def start_with_code(ops: Ops, code: Path) -> Any:
    return ops.request(
        "run/start",
        {
            "host": "plain",
            "runId": ops.new_run_id(),
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "epochs: 1\n")),
            "code": str(code),
            "command": ["{python}", "train.py"],
        },
    )


def test_a_code_directory_of_many_small_files_ships_in_one_stream_byte_exact(ops: Ops) -> None:
    code = ops.tmp / "code"
    files = code_tree(code, 400)
    (code / "train.py").write_text("print('trained')\n")
    log = ops.hosts.plain_log
    before = log.stat().st_size

    started = start_with_code(ops, code)

    run_dir = ops.far_run_dir(started.run.run_id)
    for rel, data in files.items():
        assert (run_dir / rel).read_bytes() == data, rel
    assert (run_dir / "nothing here").is_dir()
    assert not any(p.name.startswith(".rtrain-receiving") for p in run_dir.iterdir())
    assert not (run_dir / "pwned").exists()
    shipped = {f.path: (f.sha256, f.how) for f in started.shipped}
    assert shipped["a b.txt"][1] == "sent"
    assert started.uploaded_bytes >= sum(map(len, files.values()))
    # A channel per file would be 400 sessions and more.
    assert sessions_in(log, before) <= 12
    run = ops.wait_state(started.run.run_id, lambda run: run.state != "running")
    assert run.state == "completed", run
    # Each content entered the host's cache: the same code again sends nothing.
    again = start_with_code(ops, code)
    assert again.uploaded_bytes == 0
    again_dir = ops.far_run_dir(again.run.run_id)
    for rel, data in files.items():
        assert (again_dir / rel).read_bytes() == data, rel
    # The folders are made by the placement itself (no far call of their own), the empty one
    # still by its own; every file is the run's own copy of its cache entry.
    assert (again_dir / "nothing here").is_dir()
    hows = {f.path: f.how for f in again.shipped if f.path in files}
    assert set(hows) == set(files) and set(hows.values()) == {"copied"}, hows
    cache = again_dir.parent / ".cache" / "inputs"
    entries = {(p.stat().st_dev, p.stat().st_ino) for p in cache.iterdir()}
    for rel in files:
        st = (again_dir / rel).stat()
        assert (st.st_dev, st.st_ino) not in entries and st.st_nlink == 1, rel


def test_the_same_code_with_one_file_changed_sends_that_file_alone(ops: Ops) -> None:
    """The same code again, one file rewritten: every other file is placed from the host's
    cache, the changed one is sent (in one far call with the others that changed, as text
    through a long-lived shell) and lands verified, in the run and in the cache."""
    code = ops.tmp / "code"
    files = code_tree(code, 60)
    (code / "train.py").write_text("print('trained')\n")
    start_with_code(ops, code)
    changed = next(rel for rel in files if rel.startswith("pkg"))
    new = patterned(5000, salt=99)
    (code / changed).write_bytes(new)

    again = start_with_code(ops, code)

    run_dir = ops.far_run_dir(again.run.run_id)
    assert (run_dir / changed).read_bytes() == new
    for rel, data in files.items():
        if rel != changed:
            assert (run_dir / rel).read_bytes() == data, rel
    shipped = {f.path: f for f in again.shipped}
    assert (shipped[changed].how, shipped[changed].sent_bytes) == ("sent", len(new))
    assert {f.how for path, f in shipped.items() if path != changed} == {"copied"}
    assert again.uploaded_bytes == len(new)
