"""The mark prepare.sh leaves in every run directory (`.rtrain-run`, the run id), and what a
run directory holds besides it: what tests that look into one compare."""

from __future__ import annotations

from pathlib import Path

RUN_MARK = ".rtrain-run"


def entries(run_dir: Path) -> list[Path]:
    """The run directory's entries, its mark left out."""
    return [path for path in run_dir.iterdir() if path.name != RUN_MARK]


def names(run_dir: Path) -> list[str]:
    return sorted(path.name for path in entries(run_dir))
