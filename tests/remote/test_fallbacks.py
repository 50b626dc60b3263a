"""Hosts without setsid(1), env --default-signal or sha256sum still work."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import IN_CI, PYTHON, Remote, marked_pids, wait_file, wait_for


@pytest.fixture
def path_without(
    tmp_path: Path, stripped_path: Callable[[set[str]], str]
) -> Callable[[set[str]], str]:
    """A PATH lacking the named commands, with `python3` being this interpreter."""

    def build(missing: set[str]) -> str:
        own = tmp_path / "own-python"
        own.mkdir(exist_ok=True)
        if not (own / "python3").exists():
            (own / "python3").symlink_to(PYTHON)
        return f"{own}{os.pathsep}{stripped_path(missing)}"

    return build


@pytest.mark.slow
@pytest.mark.parametrize("missing", [{"setsid"}, {"setsid", "env"}], ids=["no-setsid", "no-env"])
def test_launch_detaches_through_python(
    remote: Remote, path_without: Callable[[set[str]], str], missing: set[str]
) -> None:
    env = {**remote.env, "PATH": path_without(missing)}
    assert remote.run("preflight", "no-python", "~/x", env=env).value("setsid") == "0"

    launched = remote.launch("import time; open('ready', 'w').close(); time.sleep(120)", env=env)

    assert os.getsid(launched.pid) == launched.pid
    wait_for(lambda: (launched.run_dir / "ready").exists(), what="trainer ready")
    os.kill(launched.pid, signal.SIGINT)
    assert wait_file(launched.run_dir / ".rtrain" / "status") == "130\n"
    wait_for(lambda: not marked_pids(launched.run_id), what="run to end")


def test_stop_without_setsid(remote: Remote, path_without: Callable[[set[str]], str]) -> None:
    env = {**remote.env, "PATH": path_without({"setsid"})}
    launched = remote.launch("import time; time.sleep(120)", env=env)
    wait_for(lambda: len(marked_pids(launched.run_id)) == 2, what="leader and trainer")

    result = remote.run("stop", str(launched.run_dir), launched.run_id, "1", "0", env=env)

    assert result.value("outcome") == "stopped"
    assert marked_pids(launched.run_id) == []


def assert_hashes_right(remote: Remote, env: dict[str, str]) -> None:
    """receive keeps, and list_files lists, a file with its true sha256 under `env`."""
    _, run_dir = remote.prepare()
    data = b"payload\n" * 100
    digest = hashlib.sha256(data).hexdigest()

    received = remote.run("receive", str(run_dir / "data.bin"), digest, stdin=data, env=env)
    listed = remote.run("list_files", str(run_dir), "data.bin", env=env)

    assert received.lines == [["ok", digest, str(len(data))]]
    assert listed.lines == [["file", str(len(data)), digest, "data.bin"]]


@pytest.mark.parametrize(
    ("missing", "used"),
    [
        ({"openssl"}, "sha256sum"),
        ({"openssl", "sha256sum"}, "shasum"),
        ({"openssl", "sha256sum", "shasum"}, "python3"),
    ],
    ids=["sha256sum", "shasum", "python"],
)
def test_hashing_falls_back(
    remote: Remote, path_without: Callable[[set[str]], str], missing: set[str], used: str
) -> None:
    if used != "python3" and shutil.which(used) is None:
        if IN_CI:
            pytest.fail(f"{used} is missing")
        pytest.skip(f"{used} is not installed")
    env = {**remote.env, "PATH": path_without(missing)}
    assert_hashes_right(remote, env)


def test_an_openssl_that_refuses_sha256_is_passed_over(
    remote: Remote, tmp_path: Path, path_without: Callable[[set[str]], str]
) -> None:
    # As a FIPS-restricted or broken build does: present, but it hashes nothing.
    refusing = tmp_path / "refusing"
    refusing.mkdir()
    (refusing / "openssl").write_text("#!/bin/sh\necho 'dgst: unsupported' >&2\nexit 1\n")
    (refusing / "openssl").chmod(0o755)
    env = {**remote.env, "PATH": f"{refusing}:{path_without({'openssl'})}"}
    assert_hashes_right(remote, env)


def test_setsid_without_fork_option_and_no_python(
    remote: Remote, tmp_path: Path, path_without: Callable[[set[str]], str]
) -> None:
    real_setsid = shutil.which("setsid")
    if real_setsid is None:
        if IN_CI:
            pytest.fail("setsid is missing")
        pytest.skip("setsid is not installed")
    # A setsid like busybox's: no --fork, so launch runs it in the background.
    old_tools = tmp_path / "old-tools"
    old_tools.mkdir()
    fake = old_tools / "setsid"
    fake.write_text(
        f'#!/bin/sh\n[ "$1" = --help ] && {{ echo "usage: setsid PROG"; exit 0; }}\n'
        f'exec "{real_setsid}" "$@"\n'
    )
    fake.chmod(0o755)
    env = {**remote.env, "PATH": f"{old_tools}{os.pathsep}{path_without({'setsid'})}"}
    run_id, run_dir = remote.prepare()
    code = "import time; open('ready', 'w').close(); time.sleep(120)"

    result = remote.run(
        "launch", str(run_dir), run_id, "no-such-python", PYTHON, "-c", code, env=env, timeout=20
    )

    assert result.returncode == 0, result
    leader = int(result.value("pid"))
    assert os.getsid(leader) == leader
    wait_file(run_dir / "ready", empty_ok=True)
    os.kill(leader, signal.SIGINT)
    assert wait_file(run_dir / ".rtrain" / "status") == "130\n"
