"""Two clients acting on the same run at the same moment: stopping, fetching, tailing. Each
gets a true answer, and together they leave nothing half-done."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtrain.client.errors import RemoteError
from tests.faults.conftest import Campaign
from tests.operations import trainers
from tests.operations.harness import LogCollector
from tests.operations.processes import run_pids

ROUNDS = 3
WAIT_S = 60.0

SLOW_TO_STOP = trainers.slow_to_stop(0.5)

OUTPUTS = """
import os
os.makedirs("model", exist_ok=True)
with open("model/weights.bin", "wb") as f:
    f.write(os.urandom(12 * 1024 * 1024 + 5))
with open("model/config.json", "w") as f:
    f.write('{"layers": 2}\\n')
print("saved", flush=True)
"""


def at_once(campaign: Campaign, calls: list[Callable[[Any], Any]]) -> list[Any]:
    """Run each call on its own client, released together; results (or errors) in order."""
    clients = [campaign.client() for _ in calls]
    campaign.ledger.load["clients acting on one run at once"] += len(calls)
    gate = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def one(i: int) -> None:
        gate.wait()
        try:
            results[i] = calls[i](clients[i])
        except RemoteError as error:
            results[i] = error

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive(), "a request hung"
    return results


def test_two_clients_stop_the_same_run(campaign: Campaign) -> None:
    for _ in range(ROUNDS):
        run_id = campaign.new_run_id()
        campaign.start(SLOW_TO_STOP, run_id=run_id)
        campaign.wait_file(campaign.far_run_dir(run_id) / "train.log", lambda t: "ready" in t)
        alive = set(run_pids(run_id))
        params = {"host": "plain", "runId": run_id, "grace": 5}

        def stop(client: Any, params: dict[str, Any] = params) -> Any:
            return client.request("run/stop", params)

        first, second = at_once(campaign, [stop, stop])
        for answer in (first, second):
            assert not isinstance(answer, RemoteError), answer
            # Each is true: the run was stopped, by it or by the other one.
            assert answer.outcome in ("stopped", "not_running")
            assert answer.run.state == "stopped"
        assert "stopped" in (first.outcome, second.outcome)
        assert alive <= set(first.killed) | set(second.killed)
        assert run_pids(run_id) == []
        assert campaign.status(run_id).state == "stopped"


def test_two_clients_fetch_the_same_files_into_the_same_place(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(OUTPUTS, run_id=run_id)
    campaign.wait_state(run_id, lambda run: run.state == "completed")
    far = campaign.far_run_dir(run_id) / "model"
    want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in far.iterdir()}
    for round_no in range(ROUNDS):
        dest = campaign.tmp / f"home-{round_no}"
        params = {"host": "plain", "runId": run_id, "path": "model", "dest": str(dest)}

        def fetch(client: Any, params: dict[str, Any] = params) -> Any:
            return client.request("run/fetch", params)

        answers = at_once(campaign, [fetch, fetch])
        for answer in answers:
            assert not isinstance(answer, RemoteError), answer
            assert {Path(f.local_path).name for f in answer.files} == set(want)
        landed = dest / "model"
        got = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in landed.iterdir()}
        # Exactly the files, whole, and no temporary of either fetch left beside them.
        assert campaign.ledger.verify("files fetched by two clients at once", got == want)


def test_two_clients_tail_the_same_run_while_a_third_stops_it(campaign: Campaign) -> None:
    for _ in range(ROUNDS):
        run_id = campaign.new_run_id()
        campaign.start(trainers.TRICKLE, run_id=run_id)
        logs = [LogCollector(), LogCollector()]
        params = {"host": "plain", "runId": run_id}

        def tail(i: int, params: dict[str, Any] = params) -> Callable[[Any], Any]:
            log = logs[i]  # noqa: B023 - called at once, within this round
            return lambda client: client.request("run/tail", params, on_notification=log)

        def stop(client: Any, run_id: str = run_id, params: dict[str, Any] = params) -> Any:
            campaign.wait_file(
                campaign.far_run_dir(run_id) / "train.log", lambda text: text.count("\n") > 50
            )
            return client.request("run/stop", {**params, "grace": 5})

        first, second, stopped = at_once(campaign, [tail(0), tail(1), stop])
        assert stopped.outcome == "stopped"
        far = campaign.far_log(run_id)
        for answer, log in ((first, logs[0]), (second, logs[1])):
            assert not isinstance(answer, RemoteError), answer
            assert answer.run.state == "stopped"
            assert campaign.ledger.verify("log bytes of two tails at once", log.data == far)
