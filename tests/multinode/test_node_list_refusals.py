"""A start across hosts refused up front, in one sentence, before any SSH: hosts that do not
exist are never contacted (their names would fail as unknown aliases otherwise)."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Cli


@pytest.mark.parametrize(
    ("hosts", "extra", "said"),
    [
        ("ghost1,ghost1", ["--nodes", "2"], "ghost1 appears more than once in ghost1,ghost1"),
        ("ghost1,ghost2", ["--nodes", "3"], "--nodes 3 does not match the 2 hosts"),
        ("ghost1,ghost2", [], "--nodes 1 does not match the 2 hosts"),
        ("ghost1,cluster", ["--nodes", "2"], "run on different launchers: cluster"),
        ("ghost1,ghost2", ["--nodes", "2", "--", "{python}", "train.py"], "put {torchrun}"),
        ("ghost1", ["--master-addr", "10.0.0.1"], "--master-addr is for a run across hosts"),
        ("ghost1", ["--retry", "1", "--secret", "HOME"], "cannot be retried by the daemon"),
        # Flags of another launcher beside a host list (the CLI's own refusal).
        ("ghost1,ghost2", ["--nodes", "2", "--partition", "gpu"], "--partition apply to Slurm"),
        ("ghost1,ghost2", ["--nodes", "2", "--launcher", "process"], "drop --launcher process"),
        ("ghost1", ["--partition", "gpu"], "--partition apply to Slurm hosts only, and ghost1"),
        # A reverse forward reaches node 0's loopback only.
        ("ghost1,ghost2", ["--nodes", "2", "--reverse", "5000"], "it runs across 2 hosts"),
    ],
)
def test_refused_in_one_sentence_before_any_ssh(
    cli: Cli, hosts: str, extra: list[str], said: str
) -> None:
    (cli.daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (cli.daemon.config / "rtrain" / "config.toml").write_text(
        '[hosts.cluster]\nscheduler = "slurm"\n'
    )
    cli.file("cfg.yaml", "steps: 1\n")
    done = cli("start", hosts, "-c", "cfg.yaml", "--no-follow", *extra)
    assert done.code != 0, done
    assert said in done.err, done
    assert len(done.err_lines) == 1, done
    assert "unreachable" not in done.err and "Could not resolve" not in done.err, done
