"""The daemon's store of every run's series: what it shows once a run has ended."""

from __future__ import annotations

from rtrain.daemon.metrics.store import MetricsStore
from rtrain.protocol.messages import RunInfo


def test_the_final_read_shows_a_record_still_waiting_for_the_bar() -> None:
    store = MetricsStore()
    # An HF dict after the bar's last drawing, and the trainer died before drawing it again.
    log = b"\r 25%|##  | 5/20 [00:05<00:15,  1.00it/s]\r    \r{'loss': '2.5'}\n"
    store.feed("h", "r", "log", 0, log, restarted=False)
    store.saw_read("h", "r", attempt=1, ended=False)
    assert store.series("h", "r") == [], "the bar may yet say which step it is"
    store.saw_read("h", "r", attempt=1, ended=True)
    [loss] = store.series("h", "r")
    assert (loss.name, loss.steps, loss.values) == ("loss", [5.0], [2.5])
    assert store.latest("h", "r") == {"loss": 2.5}


def test_an_ended_run_shows_where_its_bar_stopped_and_no_time_left() -> None:
    store = MetricsStore()
    store.feed("h", "r", "log", 0, b"\r 50%|#   | 20/40 [00:20<00:20,  1.00it/s]", restarted=False)
    running = store.annotate(RunInfo("h", "r", "running"))
    assert running.progress is not None and running.progress.eta == 20
    for state in ("failed", "completed", "stopped", "lost"):
        ended = store.annotate(RunInfo("h", "r", state))
        assert ended.progress is not None
        assert (ended.progress.n, ended.progress.total, ended.progress.eta) == (20, 40, None)
