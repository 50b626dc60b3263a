"""A directory of many small files comes home byte-exact on every transport: in a few
streams over ssh exec channels and `local`, file by file over the console's one PTY."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Cli

TRAINER = """
import os
names = ["a b.txt", "ünï/çödé ✓.bin", "-dash", "quote's", "back\\\\slash", "empty"]
names += [f"d{n % 5}/f{n:03d}.bin" for n in range(60)]
for n, name in enumerate(names):
    path = os.path.join("tree", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"" if name == "empty" else bytes((n + i) % 256 for i in range(n * 331)))
os.makedirs("tree/nothing here")
"""


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_a_tree_of_small_files_comes_home_byte_exact(cli: Cli, host: str) -> None:
    run_id = cli.new_run_id()
    workdir = str(cli.local_workdir) if host == "local" else cli.workdir
    started = cli(
        "start", host, "--run-id", run_id, "--workdir", workdir, "--gpus", "0",
        "--", "{python}", "-c", TRAINER,
    )  # fmt: skip
    assert started.code == 0, started
    cli.wait_state(host, run_id, "completed")

    done = cli("fetch", host, run_id, "tree", "-o", "out", "--workdir", workdir)

    assert done.code == 0, done
    far = (Path(workdir) if host == "local" else cli.far_workdir) / run_id / "tree"
    home = cli.cwd / "out" / "tree"
    far_files = sorted(p.relative_to(far) for p in far.rglob("*") if p.is_file())
    assert sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file()) == far_files
    assert len(far_files) == 66
    for name in far_files:
        assert (home / name).read_bytes() == (far / name).read_bytes(), name
    assert (home / "nothing here").is_dir()
    assert not list(home.rglob(".rtrain-partial"))
