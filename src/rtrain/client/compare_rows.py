"""Runs side by side, as data: each run's parameters, state, duration, cost, and each
metric's last and best value (best: the lowest for losses and errors, else the highest),
best first by a metric. `rtrain compare` prints them; the Python API returns them."""

from __future__ import annotations

import math
import time
from typing import Any

from rtrain.protocol import requests

from .daemon_client import DaemonClient
from .run_state_text import state_text

# Metrics for which lower is better (any name holding one of these); higher for the rest.
LOWER_IS_BETTER = ("loss", "err", "perplexity", "ppl", "wer", "cer", "mse", "mae", "time")


def lower_is_better(metric: str) -> bool:
    return any(word in metric.lower() for word in LOWER_IS_BETTER)


def compare_row(client: DaemonClient, run: Any) -> dict[str, Any]:
    """One run's row; `series` holds each metric's (steps, values)."""
    series: dict[str, tuple[list[float], list[float | None]]] = {}
    if not run.host.startswith("@"):  # a run still queued in a pool has no log yet
        answer = client.call(requests.run_metrics(host=run.host, run_id=run.run_id))
        series = {s.name: (list(s.steps), list(s.values)) for s in answer.series}
    metrics = {}
    for name, (_, values) in series.items():
        finite = [v for v in values if v is not None and math.isfinite(v)]
        if finite:
            best = min(finite) if lower_is_better(name) else max(finite)
            metrics[name] = {"last": finite[-1], "best": best}
    return {
        "host": run.host,
        "runId": run.run_id,
        "state": run.state,
        "stateText": state_text(run),
        "params": dict(run.params),
        "duration": _duration(run),
        "cost": run.cost,
        "metrics": metrics,
        "series": series,
    }


def _duration(run: Any) -> float | None:
    if run.started_at is None:
        return None
    attempts = list(run.attempts)
    ended: float | None = attempts[-1].ended_at if attempts else None
    started: float = run.started_at
    return round((ended or time.time()) - started, 1)


def best_first(rows: list[dict[str, Any]], metric: str) -> None:
    """Sorts the rows in place, the best by `metric` first, runs without it last."""

    def key(row: dict[str, Any]) -> tuple[int, float]:
        best = row["metrics"].get(metric, {}).get("best")
        if best is None:
            return (1, 0.0)
        return (0, best if lower_is_better(metric) else -best)

    rows.sort(key=key)
