"""A host that stops answering while someone tails a run: `--no-follow` says so at once,
follow says it is reconnecting (once) and carries on where it was."""

from __future__ import annotations

import socket
import time

from tests.cli.conftest import PROXIED_ALIAS as ALIAS
from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.hosts import TcpProxy


def take_away(link: TcpProxy) -> int:
    """Cut every connection and point the proxy at a port nobody listens on; returns the
    real port, to bring the host back with."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    real, link.target_port = link.target_port, dead
    link.cut()
    return real


def retries_logged(cli: Cli, run_id: str) -> int:
    return cli.daemon.log.read_text().count(f"tail {ALIAS}/{run_id}:")


def test_tail_no_follow_of_a_host_gone_away_fails_at_once(cli: Cli, link: TcpProxy) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER, host="plain")
    cli.wait_far_log(run_id, "step 1")
    take_away(link)
    done = cli("tail", ALIAS, run_id, "--no-follow", "--workdir", cli.workdir)
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert sentence.startswith(f"rtrain: host unreachable: {ALIAS}"), done
    # It did not wait for the host to come back.
    assert retries_logged(cli, run_id) == 0
    cli.finish(run_id)


def test_tail_follow_says_reconnecting_once_then_carries_on(cli: Cli, link: TcpProxy) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER, host="plain")
    tail = cli.spawn("tail", ALIAS, run_id, "--workdir", cli.workdir)
    tail.wait_for_line(lambda line: line == "step 1 | loss 1.0")
    real = take_away(link)
    deadline = time.monotonic() + WAIT_S
    while retries_logged(cli, run_id) < 3:
        assert time.monotonic() < deadline, "the tail never retried"
        time.sleep(0.1)
    link.target_port = real
    cli.finish(run_id)
    done = tail.finish()
    assert done.code == 0, done
    assert done.out_lines == ["step 1 | loss 1.0", "step 2 | loss 0.5"], done
    said, final = done.err_lines
    assert said.startswith(f"reconnecting to {ALIAS}…..") and said.count("reconnecting") == 1
    assert set(said.removeprefix(f"reconnecting to {ALIAS}…")) == {"."}, said
    assert final == f"{run_id} on {ALIAS}: completed"


def test_tail_follow_json_says_reconnecting_as_an_object(cli: Cli, link: TcpProxy) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER, host="plain")
    tail = cli.spawn("tail", ALIAS, run_id, "--workdir", cli.workdir, "--json")
    tail.wait_for_line(lambda line: "step 1" in line)
    real = take_away(link)
    line = tail.wait_for_line(lambda line: '"reconnecting"' in line)
    link.target_port = real
    cli.finish(run_id)
    done = tail.finish()
    assert done.code == 0, done
    reconnecting = [obj for obj in done.json_lines() if obj["type"] == "reconnecting"]
    assert reconnecting[0]["attempt"] == 1 and reconnecting[0]["host"] == ALIAS, line
    assert reconnecting[0]["reason"].startswith(f"host unreachable: {ALIAS}")
    assert done.json_lines()[-1]["run"]["state"] == "completed"
