"""`rtrain hosts` keeps what is worth keeping: aliases that never connected are forgotten
after a while or on request, and a long error is cut to the terminal's width."""

from __future__ import annotations

import sqlite3
import time

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import run_rtrain


def listed(cli: Cli) -> list[str]:
    return [line.split()[0] for line in cli("hosts").out_lines[1:]]


def test_an_alias_that_never_connected_is_forgotten_after_an_hour(cli: Cli) -> None:
    assert cli("preflight", "typo-host").code == 1
    assert "typo-host" in listed(cli)
    registry = sqlite3.connect(cli.daemon.state / "rtrain" / "registry.sqlite3")
    with registry:
        registry.execute(
            "UPDATE hosts SET updated = ? WHERE alias = 'typo-host'", (time.time() - 3601,)
        )
    registry.close()
    assert "typo-host" not in listed(cli)
    assert cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir).code == 0
    assert "plain" in listed(cli)  # a host that connected stays


def test_forget_drops_a_host_on_request_but_not_one_with_runs(cli: Cli) -> None:
    assert cli("preflight", "other-typo").code == 1
    forgot = cli("hosts", "--forget", "other-typo")
    assert (forgot.code, forgot.err) == (0, "forgot other-typo\n"), forgot
    assert "other-typo" not in listed(cli)

    cli.start(cli.new_run_id(), "{python}", "-c", "print('ok')")
    kept = cli("hosts", "--forget", "plain")
    assert kept.code == 2, kept
    assert kept.err.startswith("rtrain: plain has 1 run(s) rtrain knows of"), kept
    assert "plain" in listed(cli)
    assert cli("hosts", "--forget", "local").code == 2
    assert cli("hosts", "--forget", "bad;alias").code == 2


def test_a_long_error_is_cut_to_the_width(cli: Cli) -> None:
    assert cli("preflight", "typo-host-with-a-long-name").code == 1
    narrow = run_rtrain(["hosts"], env={**cli.env, "COLUMNS": "90"}, cwd=cli.cwd)
    assert narrow.code == 0, narrow
    assert all(len(line) <= 90 for line in narrow.out_lines), narrow
    (row,) = [line for line in narrow.out_lines if line.startswith("typo-host")]
    assert row.split()[1] == "failed" and "…" in row, row
    # --json keeps all of it.
    (info,) = [h for h in cli("hosts", "--json").json() if h["alias"].startswith("typo")]
    assert info["lastError"].startswith("host unreachable: typo-host-with-a-long-name")
    assert len(info["lastError"]) > 90


def test_a_narrow_terminal_keeps_the_connection_word_whole(cli: Cli) -> None:
    assert cli("preflight", "typo-host-with-a-long-name").code == 1
    # Too narrow for any of the error: the word alone, never `faile…`.
    narrow = run_rtrain(["hosts"], env={**cli.env, "COLUMNS": "40"}, cwd=cli.cwd)
    assert narrow.code == 0, narrow
    (row,) = [line for line in narrow.out_lines if line.startswith("typo-host")]
    assert row.split()[1] == "failed", row
    assert "…" not in row, row
