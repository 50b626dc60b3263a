"""The daemon's store of every run's series: what it shows once a run has ended."""

from __future__ import annotations

from rtrain.daemon.metrics.store import MetricsStore


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
