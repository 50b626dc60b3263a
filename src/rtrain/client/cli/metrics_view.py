"""`rtrain metrics`, and the few words `runs`, `status` and `hosts` say of progress, loss and
GPUs (no typer here)."""

from __future__ import annotations

import math
import sys
from typing import Any

from .output import note, print_json

SPARKS = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 40
# The series a sparkline and the tables pick, in this order of preference.
LOSS_NAMES = ("loss", "train_loss", "train/loss", "eval_loss")


def loss_name(names: Any) -> str | None:
    names = list(names)
    for name in LOSS_NAMES:
        if name in names:
            return name
    return next((n for n in names if "loss" in n), None)


def sparkline(values: list[float | None], width: int = SPARK_WIDTH) -> str:
    """The last `width` values as bars, low to high; a gap where a value is not a number."""
    shown = values[-width:]
    finite = [v for v in shown if v is not None and math.isfinite(v)]
    if not finite:
        return ""
    low, high = min(finite), max(finite)
    span = high - low or 1.0
    return "".join(
        " "
        if v is None or not math.isfinite(v)
        else SPARKS[min(len(SPARKS) - 1, int((v - low) / span * (len(SPARKS) - 1) + 0.5))]
        for v in shown
    )


def number(value: float | None) -> str:
    if value is None:
        return "nan"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.3e}"
    return f"{value:.4g}"


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return (
        f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
        if hours
        else f"{rest // 60:02d}:{rest % 60:02d}"
    )


def progress_text(progress: Any) -> str:
    """`45% (45/100) ETA 00:15`, `123 it`, or "" without a bar."""
    if progress is None:
        return ""
    n = f"{progress.n:g}"
    if progress.total:
        text = f"{progress.percent:g}% ({n}/{progress.total:g})"
        return text + (f" ETA {clock(progress.eta)}" if progress.eta is not None else "")
    return f"{n} it"


def loss_text(latest: Any) -> str:
    if not latest:
        return ""
    name = loss_name(latest)
    return f"{name} {number(latest[name])}" if name else ""


def gpu_text(gpu: Any) -> str:
    """`0: 87% 29.3/79.6 GiB` (what nvidia-smi could tell of it)."""
    parts = [f"{gpu.index}:"]
    parts.append("-" if gpu.utilization is None else f"{gpu.utilization:g}%")
    if gpu.memory_total_mib is not None:
        used = "?" if gpu.memory_used_mib is None else f"{gpu.memory_used_mib / 1024:.1f}"
        parts.append(f"{used}/{gpu.memory_total_mib / 1024:.1f} GiB")
    return " ".join(parts)


def rows(series: list[Any]) -> list[dict[str, Any]]:
    """The series as one object per step, `{"step": s, name: value, ...}`, steps in order."""
    by_step: dict[float, dict[str, Any]] = {}
    for one in series:
        for step, value in zip(one.steps, one.values, strict=False):
            row = by_step.setdefault(step, {"step": _int_if_whole(step)})
            row[one.name] = value
    return [by_step[step] for step in sorted(by_step)]


def _int_if_whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def show_metrics(result: Any, json: bool) -> None:
    if json:
        print_json(rows(result.series))
        return
    latest = result.latest or {}
    if not latest and result.progress is None:
        note(f"no metrics in the log of {result.run_id} yet (formats: see docs/metrics.md)")
        return
    bar = progress_text(result.progress)
    if bar:
        print(f"progress  {bar}")
    width = max((len(name) for name in latest), default=0)
    by_name = {one.name: one for one in result.series}
    for name, value in latest.items():
        line = f"{name.ljust(width)}  {number(value)}"
        if name == loss_name(latest) and name in by_name and sys.stdout.isatty():
            line += f"  {sparkline(by_name[name].values)}"
        print(line)


class MetricsFollower:
    """`metrics --follow`: a line per new point with --json; on a terminal one status line
    redrawn in place; piped, a line per new point."""

    def __init__(self, json: bool) -> None:
        self.json = json
        self.tty = sys.stdout.isatty() and not json
        self.loss: list[float | None] = []
        self.drawn = False

    def __call__(self, method: str, params: Any) -> None:
        if method != "run/points":
            return
        if self.json:
            for row in rows(params.series):
                print_json(row)
            return
        name = loss_name(params.latest or {})
        for one in params.series:
            if one.name == name:
                self.loss = ([] if params.reset else self.loss) + list(one.values)
        if self.tty:
            line = "  ".join(
                t
                for t in (
                    progress_text(params.progress),
                    loss_text(params.latest),
                    sparkline(self.loss),
                )
                if t
            )
            sys.stdout.write("\r\x1b[2K" + line)
            sys.stdout.flush()
            self.drawn = True
        else:
            for row in rows(params.series):
                print("  ".join(f"{k} {number(v)}" for k, v in row.items()), flush=True)

    def end(self) -> None:
        if self.drawn:
            sys.stdout.write("\n")
            sys.stdout.flush()
