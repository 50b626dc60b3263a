"""`rtrain compare RUN... | --sweep NAME`: runs side by side (parameters, state, duration,
cost, each metric's last and best), sorted by a metric; a PNG of their loss curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rtrain.client.compare_rows import best_first, compare_row, lower_is_better
from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests
from rtrain.protocol.durations import human_duration
from rtrain.protocol.limit_words import cost_text

from .describe import table
from .exit_codes import Exit
from .metrics_view import loss_name, number, sparkline
from .output import fail, friendly_errors, note, print_json
from .shared_options import JsonOpt

SPARK_COLUMNS = 20


@friendly_errors
def compare(
    runs: list[str] = typer.Argument(
        None, metavar="[HOST:]RUN...", help="The runs (a bare RUN where its id is unique)."
    ),
    sweep: str | None = typer.Option(None, "--sweep", help="Every run of this sweep."),
    sort: str | None = typer.Option(
        None, "--sort", metavar="METRIC", help="Best first by this metric (default: the loss)."
    ),
    png: Path | None = typer.Option(
        None, "--png", metavar="FILE", help="Write the runs' loss curves (or --sort's) here."
    ),
    json: bool = JsonOpt,
) -> None:
    """Compare runs: parameters, state, duration, cost, and each metric's last and best
    value (best: the lowest for losses and errors, else the highest), best first by
    --sort; sparklines of the loss here, its curves in a PNG with --png."""
    if not runs and sweep is None:
        fail("name runs to compare, or --sweep NAME.", Exit.BAD_INPUT)
    with DaemonClient.connect() as client:
        known = client.call(requests.runs_list(sweep=sweep)).runs
        chosen = list(known) if sweep is not None else []
        for word in runs or []:
            chosen.append(_find(known, word))
        if not chosen:
            fail(f"sweep {sweep!r} has no runs.", 1)
        rows = [compare_row(client, run) for run in chosen]
    metric = sort or loss_name({name for row in rows for name in row["metrics"]})
    if sort is not None and not any(sort in row["metrics"] for row in rows):
        fail(f"no run has a metric {sort!r}.", Exit.BAD_INPUT)
    if metric is not None:
        best_first(rows, metric)
    if png is not None:
        _write_png(png, rows, metric)
    if json:
        print_json([{k: v for k, v in row.items() if k != "series"} for row in rows])
        return
    _print_table(rows, metric)


def _find(known: list[Any], word: str) -> Any:
    host, sep, run_id = word.rpartition(":")
    found = [r for r in known if r.run_id == run_id and (not sep or r.host == host)]
    if not found:
        fail(f"no run {word!r}: `rtrain runs` lists the runs rtrain knows of.", 1)
    if len(found) > 1:
        hosts = ", ".join(r.host for r in found)
        fail(f"run {run_id} is on several hosts ({hosts}); name it HOST:{run_id}.", 2)
    return found[0]


def _print_table(rows: list[dict[str, Any]], metric: str | None) -> None:
    names = sorted({n for row in rows for n in row["metrics"]})
    params = sorted({p for row in rows for p in row["params"]})
    headers = ["RUN", "HOST", *params, "STATE", "DURATION", "COST"]
    headers += [f"{name} last/best" for name in names]
    if metric is not None:
        headers.append(metric)
    lines = []
    for row in rows:
        cells = [row["runId"], row["host"], *(row["params"].get(p, "-") for p in params)]
        duration = row["duration"]
        cells += [
            row["stateText"],
            human_duration(duration) if duration is not None else "-",
            cost_text(row["cost"]) if row["cost"] is not None else "-",
        ]
        for name in names:
            got = row["metrics"].get(name)
            cells.append(f"{number(got['last'])}/{number(got['best'])}" if got else "-")
        if metric is not None:
            values = row["series"].get(metric, ([], []))[1]
            cells.append(sparkline(values, SPARK_COLUMNS) or "-")
        lines.append(cells)
    print(table(headers, lines))
    if metric is not None:
        best = "lowest" if lower_is_better(metric) else "highest"
        note(f"sorted by {metric}, {best} first")


def _write_png(path: Path, rows: list[dict[str, Any]], metric: str | None) -> None:
    from .curve_png import curves_png

    if metric is None:
        fail("no run has metrics to plot yet.", 1)
    curves = [
        (
            " ".join([row["runId"], *(f"{k}={v}" for k, v in row["params"].items())]),
            row["series"][metric][0],
            row["series"][metric][1],
        )
        for row in rows
        if metric in row["series"]
    ]
    try:
        path.write_bytes(curves_png(metric, curves))
    except OSError as error:
        fail(f"{path} cannot be written: {error.strerror or error}.", 1)
    note(f"wrote {path}: {metric} of {len(curves)} run(s)")
