"""A run seen through `status`, `stop`, `tail`, `runs` and `hosts`, as a user types them."""

from __future__ import annotations

import signal

from tests.cli.conftest import FAILING_TRAINER, WAITING_TRAINER, Cli


def test_stop_a_running_run_then_again(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    status = cli("status", "plain", run_id)
    assert (status.code, status.out) == (0, "running\n"), status

    stopped = cli("stop", "plain", run_id)
    assert (stopped.code, stopped.out) == (0, f"stopped {run_id} on plain\n"), stopped
    status = cli("status", "plain", run_id)
    assert (status.code, status.out) == (0, "stopped\n"), status

    again = cli("stop", "plain", run_id)
    assert (again.code, again.out) == (0, f"{run_id} was not running on plain\n"), again
    as_json = cli("stop", "plain", run_id, "--json")
    assert as_json.code == 0, as_json
    result = as_json.json()
    assert (result["outcome"], result["killed"]) == ("not_running", [])
    assert (result["run"]["runId"], result["run"]["state"]) == (run_id, "stopped")

    # Tail of a stopped run: the whole log, then the state; the exit says it did not complete.
    tail = cli("tail", "plain", run_id)
    assert tail.code == 1, tail
    assert tail.out.startswith("step 1 | loss 1.0\n"), tail
    assert tail.err_lines[-1] == f"{run_id} on plain: stopped"


def test_ctrl_c_detaches_and_the_run_goes_on(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.file("cfg.yaml", "epochs: 1\n")
    following = cli.spawn(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--gpus", "0", "--", "{python}", "-c", WAITING_TRAINER,
    )  # fmt: skip
    following.wait_for_line(lambda line: line == "step 1 | loss 1.0")
    following.process.send_signal(signal.SIGINT)
    done = following.finish()
    assert done.code == 130, done
    assert done.out_lines[0] == f"✓ started {run_id} on plain"
    assert "Traceback" not in done.err
    assert f"detached; {run_id} keeps running on plain." in done.err_lines, done
    assert f"  reattach: rtrain tail plain {run_id}" in done.err_lines, done
    assert f"  stop:     rtrain stop plain {run_id}" in done.err_lines, done

    status = cli("status", "plain", run_id)
    assert (status.code, status.out) == (0, "running\n"), status
    # A look without following: what is there, the state, and exit 0 (the run is fine).
    peek = cli("tail", "plain", run_id, "--no-follow")
    assert (peek.code, peek.out) == (0, "step 1 | loss 1.0\n"), peek
    assert peek.err_lines[-1] == f"{run_id} on plain: running"

    reattached = cli.spawn("tail", "plain", run_id)
    reattached.wait_for_line(lambda line: line == "step 1 | loss 1.0")
    cli.finish(run_id)
    done = reattached.finish()
    assert done.code == 0, done
    assert done.out == "step 1 | loss 1.0\nstep 2 | loss 0.5\n"
    assert done.err_lines[-1] == f"{run_id} on plain: completed"


def test_tail_json_and_offset(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('first'); print('second')")
    cli.wait_state("plain", run_id, "completed")

    done = cli("tail", "plain", run_id, "--json")
    assert done.code == 0, done
    *logs, end = done.json_lines()
    assert "".join(entry["text"] for entry in logs) == "first\nsecond\n"
    assert logs[0]["offset"] == 0
    assert (end["type"], end["offset"], end["run"]["state"]) == ("end", 13, "completed")

    rest = cli("tail", "plain", run_id, "--offset", "6")
    assert (rest.code, rest.out) == (0, "second\n"), rest


def test_runs_and_hosts_list_what_happened(cli: Cli) -> None:
    good, bad, here = cli.new_run_id("good"), cli.new_run_id("bad"), cli.new_run_id("here")
    cli.start(good, "{python}", "-c", "print('ok')")
    cli.start(bad, "{python}", "-c", FAILING_TRAINER)
    cli.start(here, "{python}", "-c", "print('ok')", host="local")
    cli.wait_state("plain", good, "completed")
    cli.wait_state("plain", bad, "failed (exit 3)")
    cli.wait_state("local", here, "completed")

    table = cli("runs")
    assert table.code == 0, table
    header, *rows = table.out_lines
    assert header.split() == ["RUN", "HOST", "STATE", "STARTED", "PROGRESS", "LOSS"]
    cells = {row.split()[0]: row.split() for row in rows}
    assert set(cells) == {good, bad, here}
    assert cells[good][1:3] == ["plain", "completed"]
    assert cells[bad][1:5] == ["plain", "failed", "(exit", "3)"]
    assert cells[here][1:3] == ["local", "completed"]
    # Newest first.
    assert [row.split()[0] for row in rows] == [here, bad, good]

    plain_only = cli("runs", "--host", "plain")
    assert {row.split()[0] for row in plain_only.out_lines[1:]} == {good, bad}
    completed = cli("runs", "--state", "completed")
    assert {row.split()[0] for row in completed.out_lines[1:]} == {good, here}
    as_json = cli("runs", "--host", "plain", "--state", "failed", "--json")
    assert as_json.code == 0, as_json
    (failed,) = as_json.json()
    assert (failed["runId"], failed["host"], failed["exitCode"]) == (bad, "plain", 3)

    hosts = cli("hosts")
    assert hosts.code == 0, hosts
    assert hosts.out_lines[0].split() == [
        "HOST",
        "CONNECTION",
        "TRANSPORT",
        "RUNS",
        "RUNNING",
        "GPUS",
    ]
    by_alias = {line.split()[0]: line.split() for line in hosts.out_lines[1:]}
    assert by_alias["plain"][2:5] == ["exec", "2", "0"]
    assert by_alias["local"][2:] == ["local", "1", "0", "-"]
    listed = {h["alias"]: h for h in cli("hosts", "--json").json()}
    assert (listed["plain"]["transport"], listed["plain"]["runs"]) == ("exec", 2)
    assert listed["local"]["transport"] == "local"


def test_no_runs_yet(cli: Cli) -> None:
    done = cli("runs")
    assert (done.code, done.out) == (0, ""), done
    assert done.err == "no runs yet; start one with `rtrain start HOST -- python train.py`\n"
    assert cli("runs", "--json").json() == []
    # The embedded host is always there to try rtrain on.
    hosts = cli("hosts")
    assert hosts.out_lines[1:] == ["local  connected   local      0     0        -"], hosts


def test_unknown_run_and_taken_run_id_are_one_sentence(cli: Cli) -> None:
    missing = cli("status", "plain", "nosuch", "--workdir", cli.workdir)
    assert (missing.code, missing.out) == (1, ""), missing
    (sentence,) = missing.err_lines
    assert sentence.startswith("rtrain: no run nosuch on plain"), sentence

    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('ok')")
    taken = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--", "{python}", "-c", "print('again')",
    )  # fmt: skip
    assert (taken.code, taken.out) == (2, ""), taken
    assert taken.err_lines == [
        f"rtrain: run {run_id} already exists on plain; pick another --run-id."
    ]
