"""The console transport's figures, from its own benchmark (bench/console_transfer.py, written
with that transport): run as a program, its output taken as it is.

A JSON answer on stdout (a list of rows, or {"rows": [...]}) becomes a table; anything else
is shown verbatim. A missing script is a gap the report names, not an error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.results import ConsoleFigures

SCRIPT = Path(__file__).resolve().parent / "console_transfer.py"
TIMEOUT_S = 300


class ConsoleBenchMissing(RuntimeError):
    pass


def console_figures(quick: bool) -> ConsoleFigures:
    if not SCRIPT.exists():
        raise ConsoleBenchMissing(f"bench/{SCRIPT.name} does not exist yet")
    smoke = ["--size-mb", "10", "--reps", "1"] if quick else []
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *smoke],
        cwd=SCRIPT.parent.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench/{SCRIPT.name} failed: {done.stderr.strip()[-600:]}")
    text = done.stdout.strip()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return ConsoleFigures(rows=[], text=text)
    rows = parsed.get("rows", []) if isinstance(parsed, dict) else parsed
    if isinstance(rows, list) and all(isinstance(row, dict) for row in rows):
        return ConsoleFigures(rows=rows, text=text)
    return ConsoleFigures(rows=[], text=text)
