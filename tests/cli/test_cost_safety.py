"""Cost safety as a person sees it: a run's limits in its state words, what runs and hosts
cost at a known price (checked against the times the answer itself records), and setting a
host's price from the command line."""

from __future__ import annotations

import time

import pytest

from rtrain.protocol.limit_words import cost_text
from tests.cli.conftest import WAIT_S, Cli
from tests.operations.processes import marked_pids
from tests.torch_python import far_torch_python

STILL = "import time\nprint('sleeping', flush=True)\nwhile True:\n    time.sleep(0.1)\n"
# 3.6 an hour is 0.001 a second: the figures read as thousandths of the seconds.
PRICE = 3.6


def price_plain(cli: Cli) -> None:
    """config.toml as the daemon reads it when the test's first command starts it."""
    settings = cli.daemon.config / "rtrain"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "config.toml").write_text(f"[hosts.plain]\nprice_per_hour = {PRICE}\n")


def wait_out(cli: Cli, args: list[str], done: object) -> str:
    deadline = time.monotonic() + WAIT_S
    while True:
        out = cli(*args).out.strip()
        if callable(done) and done(out):
            return out
        assert time.monotonic() < deadline, f"rtrain {' '.join(args)} stayed {out!r}"
        time.sleep(0.2)


def test_a_run_stopped_by_its_max_duration_says_so_and_what_it_cost(cli: Cli) -> None:
    price_plain(cli)
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", STILL, max_duration="2s", stall_after="off")
    cli.wait_state("plain", run_id, "stopped (max duration 2s)")

    (run,) = [r for r in cli("runs", "--json").json() if r["runId"] == run_id]
    assert (run["stoppedBy"], run["maxDuration"]) == ("max_duration", 2)
    (attempt,) = run["attempts"]
    billed = attempt["endedAt"] - attempt["runningAt"]
    assert run["billedSeconds"] == pytest.approx(billed, abs=0.01)
    assert run["cost"] == pytest.approx(run["billedSeconds"] / 3600 * PRICE)
    assert run["pricePerHour"] == PRICE

    table = cli("runs")
    header, *rows = table.out_lines
    assert header.split()[-1] == "COST"
    (row,) = [line for line in rows if line.startswith(run_id)]
    assert row.split()[-1] == cost_text(run["cost"])
    assert "stopped (max duration 2s)" in row

    hosts = {h["alias"]: h for h in cli("hosts", "--json").json()}
    plain = hosts["plain"]
    assert plain["pricePerHour"] == PRICE
    assert 0 <= plain["idleSeconds"] <= plain["upSeconds"]
    assert plain["cost"] == pytest.approx(plain["upSeconds"] / 3600 * PRICE)
    assert plain["idleCost"] == pytest.approx(plain["idleSeconds"] / 3600 * PRICE)
    listing = cli("hosts")
    assert listing.out_lines[0].split()[-2:] == ["COST", "IDLE"]

    # With no run left, the host with a price is still watched: its idle time grows.
    def idle_seconds() -> float:
        hosts = {h["alias"]: h for h in cli("hosts", "--json").json()}
        return float(hosts["plain"]["idleSeconds"])

    deadline = time.monotonic() + WAIT_S
    while idle_seconds() <= plain["idleSeconds"]:
        assert time.monotonic() < deadline, "the idle host was not watched"
        time.sleep(0.2)


def test_a_still_run_reads_running_stalled(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", STILL, stall_after="2s")
    said = wait_out(cli, ["status", "plain", run_id], lambda out: out != "running")
    assert said.startswith("running (stalled "), said
    (run,) = [r for r in cli("runs", "--json").json() if r["runId"] == run_id]
    assert run["state"] == "running" and run["stalledSince"] <= time.time()
    assert run["stallAfter"] == 2 and run["onStall"] == "flag"


def test_a_hosts_price_is_set_and_cleared_from_the_command_line(cli: Cli) -> None:
    done = cli("hosts", "--price", "plain", "0.5")
    assert done.code == 0, done
    assert done.err_lines == ["plain costs 0.5 an hour"]
    hosts = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert hosts["plain"]["pricePerHour"] == 0.5
    cleared = cli("hosts", "--price", "plain", "off", "--json")
    assert cleared.code == 0, cleared
    assert "pricePerHour" not in cleared.json()
    # A host known only for its price is not known any more.
    hosts = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert "pricePerHour" not in hosts.get("plain", {})


# Each rank says it is up, then sleeps with its log still.
SLEEPING_RANK = """
import os, time
open("rank-%s-up" % os.environ["RANK"], "w").close()
print("rank up", flush=True)
time.sleep(600)
"""


def test_a_torchrun_run_past_its_max_duration_leaves_no_rank(cli: Cli) -> None:
    torch_python = far_torch_python()
    cli.file("ranks.py", SLEEPING_RANK)
    run_id = cli.new_run_id("ranks")
    cli.start(
        run_id,
        "{torchrun}",
        "config.yaml",
        gpus="2",
        python=torch_python,
        config="ranks.py",
        max_duration="15s",
        stall_after="off",
    )
    # Both ranks come up before the limit, even where torchrun takes seconds to start (a busy
    # machine, a parallel suite), so the limit has real ranks to end.
    up = [cli.far_run_dir(run_id) / f"rank-{rank}-up" for rank in (0, 1)]
    deadline = time.monotonic() + 15
    while not all(path.exists() for path in up):
        assert time.monotonic() < deadline, "the ranks did not come up within the limit"
        time.sleep(0.2)
    cli.wait_state("plain", run_id, "stopped (max duration 15s)")
    assert marked_pids(lambda marker: marker == run_id) == []
