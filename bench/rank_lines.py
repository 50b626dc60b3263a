"""How many lines of torchrun ranks printing at once reach train.log whole.

    python -m bench.rank_lines PYTHON_WITH_TORCH [RANKS] [LINES]

Runs the nanoGPT-shaped test trainer's line flood (`--lines=N`: every rank prints N numbered
lines at once) under torchrun twice, as rtrain launched it before and now, with
PYTHONUNBUFFERED=1 and the output appended to one train.log:
  shared   every rank writes to train.log itself (the old `{torchrun}`)
  relayed  torchrun --redirects=3 under rtrain-ranks (remote/rank_lines.py)
and counts the lines that arrived whole (`[rankN]: ` prefix or not).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAINER = ROOT / "tests" / "trainers" / "nanogpt_shaped.py"
RELAY = ROOT / "daemon" / "remote" / "rank_lines.py"
WHOLE = re.compile(rb"^(?:\[rank(\d+)\]: )?rank (\d+) line \d+ x{64}$")


def run(python: str, ranks: int, lines: int, relayed: bool) -> tuple[int, int]:
    """(whole lines, lines expected)."""
    with tempfile.TemporaryDirectory(prefix="rank-lines-") as folder:
        run_dir = Path(folder)
        torchrun = [python, "-m", "torch.distributed.run", "--standalone"]
        torchrun += [f"--nproc-per-node={ranks}", "--log-dir=torchrun_logs"]
        if relayed:
            torchrun = [python, str(RELAY), str(run_dir), "torchrun_logs", *torchrun]
            torchrun.append("--redirects=3")
        command = [*torchrun, str(TRAINER), f"--lines={lines}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(run_dir / "train.log", "ab") as log:
            subprocess.run(command, cwd=run_dir, env=env, stdout=log, stderr=log, check=True)
        whole = 0
        for line in (run_dir / "train.log").read_bytes().splitlines():
            match = WHOLE.match(line)
            if match and match[1] in (None, match[2]):
                whole += 1
        return whole, ranks * lines


def main() -> None:
    python = sys.argv[1]
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    for name, relayed in (("shared", False), ("relayed", True)):
        whole, expected = run(python, ranks, lines, relayed)
        print(f"{name:8} {ranks} ranks x {lines} lines: {whole} of {expected} whole")


if __name__ == "__main__":
    main()
