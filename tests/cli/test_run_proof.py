"""A directory that is not a run of rtrain's is never deleted, killed in, run in or read from,
whatever run id and --workdir name it (the fault: `rtrain rm gpubox keep --workdir
~/p-victim` removed a plain directory of notes, exit 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import Outcome
from tests.hosts import GPU_USER


def victim_dir(cli: Cli, host: str) -> tuple[Path, str]:
    """A plain directory of the far user's, `keep/notes.txt`, inside a directory a user might
    pass as --workdir; its path on this machine and the --workdir that names its parent."""
    if host == "local":
        parent = cli.daemon.root / f"p-victim-{cli.tag}"
        workdir = str(parent)
    else:
        parent = cli.hosts.home(GPU_USER) / f"p-victim-{cli.tag}"
        workdir = f"~/p-victim-{cli.tag}"
    keep = parent / "keep"
    keep.mkdir(parents=True)
    (keep / "notes.txt").write_text("my notes\n")
    if host != "local":
        home = cli.hosts.home(GPU_USER).stat()
        for path in (parent, keep, keep / "notes.txt"):
            os.chown(path, home.st_uid, home.st_gid)
    return keep, workdir


def refused_as_no_run(done: Outcome, host: str, name: str) -> None:
    """One sentence that there is no such run, naming where it looked, and no error word of
    the far side's in it. rm and restart ask how the run stands first (no run there: exit 1);
    stop, exec and fetch find it out on the host as they begin (not a run of rtrain's, as a
    wrong run id or --workdir is: exit 2)."""
    assert done.code in (1, 2), done
    assert done.err.count("\n") == 1, done
    assert f"no run {name} on {host}" in done.err and f"/{name}" in done.err, done
    assert "not_a_run" not in done.err, done


@pytest.mark.parametrize("host", ["plain", "console", "local"])
def test_rm_of_a_directory_that_is_no_run_removes_nothing(cli: Cli, host: str) -> None:
    keep, workdir = victim_dir(cli, host)
    done = cli("rm", host, "keep", "--workdir", workdir)
    refused_as_no_run(done, host, "keep")
    assert (keep / "notes.txt").read_text() == "my notes\n"


@pytest.mark.parametrize("host", ["plain", "local"])
def test_stop_exec_fetch_and_restart_refuse_a_directory_that_is_no_run(cli: Cli, host: str) -> None:
    keep, workdir = victim_dir(cli, host)
    exec_ = cli("exec", host, "keep", "--workdir", workdir, "--", "touch", "made-by-exec")
    refused_as_no_run(exec_, host, "keep")
    assert not (keep / "made-by-exec").exists()

    stop = cli("stop", host, "keep", "--workdir", workdir)
    refused_as_no_run(stop, host, "keep")
    assert "nothing was stopped" in stop.err, stop

    out = cli.cwd / "fetched"
    fetch = cli("fetch", host, "keep", "notes.txt", "-o", str(out), "--workdir", workdir)
    refused_as_no_run(fetch, host, "keep")
    assert not (out / "notes.txt").exists()

    restart = cli("restart", host, "keep", "--workdir", workdir, "--no-follow")
    refused_as_no_run(restart, host, "keep")
    assert sorted(p.name for p in keep.iterdir()) == ["notes.txt"]


def test_a_run_dir_that_is_a_link_is_refused_with_the_reason(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('done')")
    cli.wait_state("plain", run_id, "completed")
    real = cli.far_run_dir(run_id)
    # The same run reached through a link named like another run id.
    alias = cli.new_run_id("alias")
    (cli.far_workdir / alias).symlink_to(real)
    done = cli("rm", "plain", alias, "--workdir", cli.workdir)
    refused_as_no_run(done, "plain", alias)
    assert "started meanwhile" not in done.err, done
    assert (real / "train.log").exists()

    # The run itself, by its own name, still goes.
    assert cli("rm", "plain", run_id).code == 0
    assert not real.exists()
