"""input_tree.sh's links and cache_place.sh's placing, run as the daemon runs them, under
dash and bash: a link is made literally and never through another link; a placed input is
the run's own writable copy while the cache entry stays read-only and unchanged."""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from pathlib import Path

import pytest

from rtrain.daemon.remote.contract.answers import Completed
from rtrain.daemon.remote.contract.file_scripts import placed_answer
from tests.remote.conftest import Remote


def test_a_link_is_made_literally_and_never_through_a_link(remote: Remote, tmp_path: Path) -> None:
    run_id, run_dir = remote.prepare()
    hostile = "$(touch pwned)`touch pwned2`; rm -rf ~"
    steps = f"d\tsub\nl\tsub/creds\t/etc/passwd\nl\todd\t{hostile}\nl\tout\t{tmp_path}\n"
    done = remote.run("input_tree", str(run_dir), run_id, stdin=steps.encode())
    assert done.returncode == 0, done
    assert os.readlink(run_dir / "sub" / "creds") == "/etc/passwd"
    assert os.readlink(run_dir / "odd") == hostile
    assert not (remote.home / "pwned").exists() and not (run_dir / "pwned").exists()
    # `out` leads out of the run: nothing is made through it, nor through `..`.
    for rel in ("out/x", "../x", "sub/../x"):
        done = remote.run("input_tree", str(run_dir), run_id, stdin=f"l\t{rel}\tt\n".encode())
        assert done.returncode == 7 and "path_outside_run" in done.stdout.decode(), (rel, done)
    assert not (tmp_path / "x").is_symlink() and not (run_dir.parent / "x").is_symlink()


def test_a_placed_input_is_the_runs_own_and_the_entry_stays_read_only(remote: Remote) -> None:
    data = b"the config\n"
    digest = hashlib.sha256(data).hexdigest()
    workdir = remote.home / ".rtrain"
    first_id, first = remote.prepare()
    second_id, second = remote.prepare()
    entry = cached_entry(workdir, data)
    for run_dir in (first, second):
        listing = f"{digest}\t{len(data)}\tconf/config.yaml\n".encode()
        done = remote.run("cache_place", str(workdir), str(run_dir), stdin=listing)
        assert done.returncode == 0, done
        # Every input placed: one line for all of them (python3's placing; the host has it).
        assert done.values("placed_all") == [["1"]], done
    mine = first / "conf" / "config.yaml"
    assert stat.S_IMODE(mine.stat().st_mode) & 0o200, "the run may write its copy"
    assert not mine.samefile(entry)
    with open(mine, "ab") as f:
        f.write(b"appended\n")
    assert entry.read_bytes() == data and (second / "conf" / "config.yaml").read_bytes() == data
    assert stat.S_IMODE(entry.stat().st_mode) == 0o400


def cached_entry(workdir: Path, data: bytes) -> Path:
    """`data` as an entry of the work directory's input cache, read-only, as a start leaves it."""
    entry = workdir / ".cache" / "inputs" / hashlib.sha256(data).hexdigest()
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_bytes(data)
    entry.chmod(0o400)
    return entry


def _without_python(remote: Remote, tmp_path: Path) -> dict[str, str]:
    """The environment of a host with every tool of this one's PATH but python."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for folder in remote.env["PATH"].split(os.pathsep):
        for tool in Path(folder).glob("*") if Path(folder).is_dir() else []:
            if not tool.name.startswith("python") and not (tools / tool.name).exists():
                (tools / tool.name).symlink_to(tool)
    return {**remote.env, "PATH": str(tools)}


@pytest.mark.parametrize("python", ["python3", "no python"])
def test_a_cache_entry_changed_in_place_with_the_same_size_is_dropped_not_placed(
    remote: Remote, tmp_path: Path, python: str
) -> None:
    data = b"the shipped bytes\n" * 100
    digest = hashlib.sha256(data).hexdigest()
    workdir = remote.home / ".rtrain"
    env = remote.env if python == "python3" else _without_python(remote, tmp_path)
    entry = cached_entry(workdir, data)
    listing = f"{digest}\t{len(data)}\tdata.bin\n".encode()
    _, first = remote.prepare()
    done = remote.run("cache_place", str(workdir), str(first), stdin=listing, env=env)
    if python == "python3":  # one line when every input was placed
        assert done.values("placed_all") == [["1"]], done
    else:
        assert done.values("placed") == [["data.bin", "copied"]], done
    # Same size, same mode, other bytes: as a trainer holding a link to it could leave it.
    entry.chmod(0o600)
    with open(entry, "r+b") as f:
        f.write(b"THE")
    entry.chmod(0o400)
    _, second = remote.prepare()
    done = remote.run("cache_place", str(workdir), str(second), stdin=listing, env=env)
    assert done.returncode == 0, done
    assert done.values("missing") == [["data.bin"]] and done.values("placed") == []
    assert done.values("placed_all") in ([], [["0"]])
    assert not entry.exists() and not (second / "data.bin").exists()
    assert (first / "data.bin").read_bytes() == data


@pytest.mark.parametrize("python", ["python3", "no python"])
def test_prepare_claims_then_places_what_the_cache_holds_in_one_call(
    remote: Remote, tmp_path: Path, python: str
) -> None:
    """A warm start's claim and placement are one far call (prepare.sh `place`): the run
    directory is made, then each cached input placed in it as the run's own copy; an input
    the cache lacks is `missing`. A run id that exists is refused before anything is placed."""
    data = b"cached bytes\n" * 50
    digest = hashlib.sha256(data).hexdigest()
    absent = hashlib.sha256(b"never shipped").hexdigest()
    workdir = remote.home / ".rtrain"
    env = remote.env if python == "python3" else _without_python(remote, tmp_path)
    entry = cached_entry(workdir, data)
    listing = f"{digest}\t{len(data)}\tsub/data.bin\n{absent}\t13\tother.bin\n".encode()
    run_id = remote.new_run_id()
    done = remote.run("prepare", "~/.rtrain", run_id, "place", stdin=listing, env=env)
    assert done.returncode == 0, done
    run_dir = workdir / run_id
    assert done.value("run_dir") == str(run_dir)
    # What the daemon reads of it: the one cached input placed, the other missing (python3
    # says the placed ones in one `placed_all` line, a shell a line each).
    inputs = [(digest, len(data), "sub/data.bin"), (absent, 13, "other.bin")]
    read = placed_answer(Completed(done.returncode, done.stdout, b""), inputs)
    assert read.placed == {"sub/data.bin": "copied"}, done
    assert done.values("missing") == [["other.bin"]], done
    assert (run_dir / "sub" / "data.bin").read_bytes() == data
    assert not (run_dir / "sub" / "data.bin").samefile(entry)
    assert not (run_dir / "other.bin").exists()

    (run_dir / "train.log").write_text("the first run's\n")
    again = remote.run("prepare", "~/.rtrain", run_id, "place", stdin=listing, env=env)
    assert again.returncode == 17 and again.lines == [["error", "run_exists"]], again
    assert sorted(p.name for p in run_dir.iterdir() if not p.name.startswith(".")) == [
        "sub",
        "train.log",
    ]


@pytest.mark.parametrize("python", ["python3", "no python"])
def test_put_small_caches_and_places_only_bytes_that_are_their_sha256(
    remote: Remote, tmp_path: Path, python: str
) -> None:
    """A few small inputs as text (put_small.sh, through a long-lived shell): each whose bytes
    are its sha256 enters the cache read-only and is placed as the run's own copy; bytes that
    are not are refused, nothing lands under their name. A host without python3 says so."""
    good = b"changed file\n\x00\xff" * 40
    bad = b"what was sent"
    good_sha = hashlib.sha256(good).hexdigest()
    claimed_sha = hashlib.sha256(b"what was hashed").hexdigest()
    workdir = remote.home / ".rtrain"
    env = remote.env if python == "python3" else _without_python(remote, tmp_path)
    _, run_dir = remote.prepare()
    text = (
        f"{good_sha}\t{len(good)}\tpkg/mod.bin\n{base64.b64encode(good).decode()}\n"
        f"{claimed_sha}\t{len(bad)}\tother.txt\n{base64.b64encode(bad).decode()}\n"
    )
    done = remote.run("put_small", str(workdir), str(run_dir), stdin=text.encode(), env=env)
    if python == "no python":
        assert done.returncode == 2 and done.lines == [["error", "no_python"]], done
        assert not (run_dir / "pkg").exists()
        return
    assert done.returncode == 3, done
    assert done.values("placed") == [["pkg/mod.bin", "copied"]], done
    assert done.values("mismatch") == [["other.txt"]], done
    entry = workdir / ".cache" / "inputs" / good_sha
    assert entry.read_bytes() == good and stat.S_IMODE(entry.stat().st_mode) == 0o400
    placed = run_dir / "pkg" / "mod.bin"
    assert placed.read_bytes() == good and not placed.samefile(entry)
    assert not (run_dir / "other.txt").exists()
    assert not (workdir / ".cache" / "inputs" / claimed_sha).exists()
    # The next start places it from the cache without reading it again.
    _, second = remote.prepare()
    listing = f"{good_sha}\t{len(good)}\tmod.bin\n".encode()
    again = remote.run("cache_place", str(workdir), str(second), stdin=listing, env=env)
    assert again.values("placed_all") == [["1"]], again
