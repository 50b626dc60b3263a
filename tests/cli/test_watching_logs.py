"""Logs that move: a progress bar redrawn in place on a terminal, the exact bytes when piped."""

from __future__ import annotations

import base64
import subprocess

from tests.cli.conftest import Cli
from tests.cli.rtrain_command import rtrain_executable
from tests.cli.tmux_terminal import Tmux

# Draws a tqdm-style bar with carriage returns, holds at 3/10 until the file `next` exists (so
# the bar's latest state sits in the log with no newline after it), then finishes the bar.
BAR_TRAINER = r"""
import os, sys, time
def bar(n):
    sys.stdout.write("\rEpoch 1: %3d%%|%-10s| %d/10 [00:%02d<00:10,  2.50it/s]"
                     % (n * 10, "#" * n, n, n))
    sys.stdout.flush()
print("loading", flush=True)
for n in range(1, 4):
    bar(n)
while not os.path.exists("next"):
    time.sleep(0.05)
for n in range(4, 11):
    bar(n)
print("\nsaved model", flush=True)
"""

# Bytes that are not all UTF-8, a bar without a newline, a character cut at the very end.
ODD_BYTES = (
    b"plain line\n"
    b"latin-1 caf\xe9 and a stray \xff\xfe\n"
    b"caf\xc3\xa9 \xe2\x82\xac\n"
    b"\r  1/4 bar\r  2/4 bar\r  4/4 bar"
    b"\ncut in half \xe2\x82"
)
BYTES_TRAINER = f"""
import sys
sys.stdout.buffer.write({ODD_BYTES!r})
sys.stdout.buffer.flush()
"""


def test_a_progress_bar_redraws_in_place_on_a_terminal(cli: Cli, terminal: Tmux) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", BAR_TRAINER)
    terminal.start(f"{rtrain_executable()} tail plain {run_id}")
    # The bar's latest state shows while the trainer still holds it without a newline.
    shown = terminal.wait_for("3/10")
    bars = [line for line in shown if "|" in line and "/10" in line]
    assert len(bars) == 1, shown
    assert "1/10" not in "\n".join(shown) and "2/10" not in "\n".join(shown)
    (cli.far_run_dir(run_id) / "next").touch()
    shown = terminal.wait_for(f"{run_id} on plain: completed")
    bars = [line for line in shown if "|" in line and "/10" in line]
    assert len(bars) == 1 and "10/10" in bars[0], shown
    text = "\n".join(shown)
    assert "loading" in text and "saved model" in text
    assert shown.index(bars[0]) < next(i for i, line in enumerate(shown) if "saved model" in line)


def test_piped_tail_is_the_log_byte_for_byte(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", BYTES_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    log = (cli.far_run_dir(run_id) / "train.log").read_bytes()
    assert log == ODD_BYTES
    done = subprocess.run(
        [rtrain_executable(), "tail", "plain", run_id],
        env=cli.env,
        cwd=cli.cwd,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == log


def test_tail_json_carries_the_exact_bytes(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", BYTES_TRAINER)
    cli.wait_state("plain", run_id, "completed")
    done = cli("tail", "plain", run_id, "--json")
    assert done.code == 0, done
    lines = done.json_lines()
    chunks = [line for line in lines if line["type"] == "log"]
    data = b"".join(
        base64.b64decode(c["base64"]) if "base64" in c else c["text"].encode() for c in chunks
    )
    assert data == ODD_BYTES
    # The flag is there exactly where the bytes are not UTF-8, and offsets count bytes.
    assert any("base64" in c for c in chunks)
    assert chunks[-1]["nextOffset"] == len(ODD_BYTES)
    assert lines[-1]["type"] == "end" and lines[-1]["offset"] == len(ODD_BYTES)
