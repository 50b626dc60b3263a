"""A hostile far side: a log full of terminal escape sequences, a pid file rewritten to name a
process that is not the run's, a log line of megabytes without a newline."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time

import pytest

from tests.cli.rtrain_command import rtrain_executable
from tests.faults.conftest import Campaign, stranger_process
from tests.operations import trainers
from tests.operations.processes import pid_alive, run_pids

WAIT_S = 30.0

# What a hostile log may try on the terminal that shows it, each followed by visible text.
ESCAPES = {
    "window title (OSC 0, BEL)": "\x1b]0;owned\x07",
    "clipboard write (OSC 52, ST)": "\x1b]52;c;cm0gLXJmIH4=\x1b\\",
    "hyperlink (OSC 8)": "\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\",
    "clear screen (CSI 2J)": "\x1b[2J",
    "cursor home (CSI H)": "\x1b[H",
    "colour (SGR)": "\x1b[31;1m",
    "erase line (CSI K)": "\x1b[2K",
    "8-bit CSI": "\x9b31m",
    "device status query (CSI 6n)": "\x1b[6n",
    "DCS string": "\x1bPq#0;2;0;0;0\x1b\\",
    "bell": "\x07",
    "backspace over text": "abc\x08\x08\x08",
    "carriage return overwrite": "fake prompt\r",
    "keypad mode (ESC =)": "\x1b=",
    "NUL": "\x00",
}

ESCAPE_TRAINER = """
import json, sys
sequences = json.loads(sys.argv[1])
for name, sequence in sequences.items():
    print("%s -> %svisible-%d" % (name, sequence, len(name)), flush=True)
print("the end", flush=True)
"""

# One line of (about) 5 MB without a newline, then a short line. The character is 3 bytes in
# UTF-8, so a chunk boundary falls inside one unless the chunks respect them.
HUGE_LINE = """
import sys, time
out = sys.stdout.buffer
piece = ("%s" * 65536).encode()
for _ in range(%d):
    out.write(piece)
    out.flush()
    time.sleep(0.01)
out.write(b"\\nafter the huge line\\n")
out.flush()
"""


def tail_in_a_terminal(args: list[str]) -> bytes:
    """Run `rtrain ARGS` with its stdout and stderr on a pty, as in a user's terminal."""
    main, child = pty.openpty()
    process = subprocess.Popen(
        [rtrain_executable(), *args],
        stdin=subprocess.DEVNULL,
        stdout=child,
        stderr=child,
        env=dict(os.environ),
    )
    os.close(child)
    seen = bytearray()
    deadline = time.monotonic() + WAIT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # EIO: the child side is closed
                    break
                if not data:
                    break
                seen += data
            elif process.poll() is not None:
                break
        process.wait(WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    return bytes(seen)


def test_terminal_escapes_in_a_log_never_reach_the_terminal_raw(campaign: Campaign) -> None:
    import json

    run_id = campaign.new_run_id()
    campaign.start(
        None,
        run_id=run_id,
        command=["{python}", "-c", ESCAPE_TRAINER, json.dumps(ESCAPES)],
    )
    campaign.wait_state(run_id, lambda run: run.state == "completed")
    campaign.ledger.bad_input("terminal escape sequences in a log", len(ESCAPES))
    far = campaign.far_log(run_id)
    assert b"\x1b]52;" in far  # the host really wrote them

    shown = tail_in_a_terminal(["tail", "plain", run_id])
    # Nothing that a terminal would act on: no ESC, no 8-bit CSI, no BEL, no backspace,
    # no NUL. A carriage return stays, as on the trainer's own terminal (progress bars redraw
    # with it), but it only ever returns over the log's own line: the pty turns "\n" into
    # "\r\n" itself, and rtrain's closing words start on a line of their own.
    for byte in (b"\x1b", b"\xc2\x9b", b"\x07", b"\x08", b"\x00"):
        assert byte not in shown, (byte, shown)
    assert shown.replace(b"\r\n", b"").count(b"\r") == far.replace(b"\r\n", b"").count(b"\r")
    assert b"\r\n" + run_id.encode() + b" on plain: completed" in shown
    # Yet every line's own text is there.
    text = shown.decode()
    for name in ESCAPES:
        assert f"visible-{len(name)}" in text
    assert "the end" in text

    # Through a pipe (a script's reading) the bytes are passed on exactly as written.
    piped = subprocess.run(
        [rtrain_executable(), "tail", "plain", run_id],
        capture_output=True,
        env=dict(os.environ),
        timeout=WAIT_S,
    )
    assert piped.stdout == far


# What the rewritten pid file says, and whether stop must refuse (else it stops the run by
# its marker, ignoring the file).
PID_FILES = {
    "a stranger of the same user": ("{stranger}", True),
    "a root process (this test)": ("{root}", True),
    "pid 1": ("1", True),
    "pid 0": ("0", True),
    "-1 (kill -1 would hit everything)": ("-1", False),
    "a process group (-PID)": ("-{stranger}", False),
    "shell text": ("$(touch pwned); {stranger}", False),
    "two pids": ("{stranger} {root}", False),
    "ten digits": ("1234567890", False),
    "empty": ("", False),
}


@pytest.mark.parametrize("what", list(PID_FILES))
def test_a_pid_file_naming_a_foreign_process(campaign: Campaign, what: str) -> None:
    text, refused = PID_FILES[what]
    run_id = campaign.new_run_id()
    campaign.start(trainers.SLEEPER, run_id=run_id)
    run_dir = campaign.far_run_dir(run_id)
    campaign.wait_file(run_dir / "train.log", lambda t: "sleeping" in t)
    own = set(run_pids(run_id))
    stranger = stranger_process()
    try:
        pid_file = run_dir / ".rtrain" / "train.pid"
        pid_file.write_text(text.format(stranger=stranger.pid, root=os.getpid()) + "\n")
        campaign.ledger.bad_input("pid file rewritten")
        if refused:
            error = campaign.error("run/stop", {"host": "plain", "runId": run_id, "grace": 2})
            assert error.kind == "stop_refused", error.message
            # Nothing was signalled: the run lives on, as does the stranger.
            assert own <= set(run_pids(run_id))
        else:
            result = campaign.request("run/stop", {"host": "plain", "runId": run_id, "grace": 2})
            # The file was no pid at all: the run's own processes, found by marker, stopped.
            assert result.outcome == "stopped"
            assert run_pids(run_id) == []
            assert stranger.pid not in result.killed
        assert pid_alive(stranger.pid), "stop killed a process that is not the run's"
        assert pid_alive(os.getpid())
        assert not (run_dir / "pwned").exists()
        assert not (campaign.home / "pwned").exists()
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.parametrize("char", ["x", "€"], ids=["ascii", "3-byte utf-8"])
def test_a_huge_line_without_newline_is_delivered_exactly(campaign: Campaign, char: str) -> None:
    run_id = campaign.new_run_id()
    pieces = -(-(5 * 1024 * 1024 + 1) // (65536 * len(char.encode())))
    campaign.start(HUGE_LINE % (char, pieces), run_id=run_id)
    campaign.ledger.bad_input("5 MB log line without a newline")
    # Followed while it is being written, and read again once the run has ended.
    following, live = campaign.tail(run_id)
    assert following.run.state == "completed"
    far = campaign.far_log(run_id)
    assert len(far) > 5 * 1024 * 1024
    assert campaign.ledger.verify("bytes of a 5 MB line (tail while running)", live.data == far)
    after, again = campaign.tail(run_id)
    assert campaign.ledger.verify("bytes of a 5 MB line (tail after the end)", again.data == far)
    assert after.offset == len(far)
    for chunks in (live, again):
        chained = all(
            a.next_offset == b.offset
            for a, b in zip(chunks.chunks, chunks.chunks[1:], strict=False)
        )
        assert chained and chunks.chunks[-1].next_offset == len(far)
