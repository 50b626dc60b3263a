"""The console's framing without ssh: noise stripping, markers, request encoding."""

from __future__ import annotations

import base64
import hashlib

from rtrain.daemon.ssh.console_agent import (
    HEADER_SIZE,
    agent_text,
    boot_message,
    bootstrap_line,
)
from rtrain.daemon.ssh.console_framing import MarkerScanner, Request
from rtrain.daemon.ssh.console_noise import base64_payload
from rtrain.daemon.ssh.console_session import verified_answer

TOKEN = "0123456789abcdef"
# What the suite's gateway prints around a command: title, colours, bracketed paste, CRs.
PROMPT = (
    b"\x1b[?2004h\x1b]0;rtrain-gpu@vm: ~\x07\x1b[01;32mrtrain-gpu@vm\x1b[00m:"
    b"\x1b[01;34m~\x1b[00m$ \x1b[?2004l\r"
)


def wrapped(data: bytes) -> bytes:
    return base64.encodebytes(data)


def test_terminal_escapes_and_line_noise_inside_a_block_are_dropped() -> None:
    data = bytes(range(256)) * 4
    text = wrapped(data).replace(b"\n", b"\r\n")
    escapes = b"\x1b[?2004h\x1b]0;user@pod: ~/x1\x07\x1b[01;32m\x1b[K\x1b[?2004l\r"
    noisy = b"\r\n" + text[:100] + escapes + text[100:301] + b"\x1b[0m" + text[301:] + b"\r\n"
    assert base64_payload(noisy) == data


def test_printable_noise_inside_a_block_changes_it_and_is_caught_by_the_hash() -> None:
    # A prompt's own letters are base64 letters: they cannot be told apart, only detected.
    data = bytes(range(256))
    text = wrapped(data)
    got = base64_payload(text[:40] + PROMPT + text[40:])
    assert got is None or hashlib.sha256(got).digest() != hashlib.sha256(data).digest()


def test_a_damaged_block_is_never_decoded_into_something_else_silently() -> None:
    """rtrain's own check: an answer counts only when its blocks decode to the bytes whose
    sha256 the far side sent in the end marker; a damaged one is asked again."""
    out, err = b"payload" * 100, b"a warning\n"
    vouched = ("0", hashlib.sha256(out).hexdigest(), hashlib.sha256(err).hexdigest())
    intact = verified_answer(vouched, wrapped(out), wrapped(err))
    assert intact is not None and (intact.returncode, intact.stdout, intact.stderr) == (0, out, err)
    damaged = bytearray(wrapped(out))
    damaged[10] = ord("A") if damaged[10] != ord("A") else ord("B")
    assert base64_payload(bytes(damaged)) not in (None, out)  # decodes, to other bytes...
    assert verified_answer(vouched, bytes(damaged), wrapped(err)) is None  # ...and is refused
    assert verified_answer(vouched, wrapped(out)[:-5], wrapped(err)) is None  # cut short
    assert verified_answer(vouched, wrapped(out), wrapped(err + b"!")) is None  # stderr too
    assert verified_answer(("x", *vouched[1:]), wrapped(out), wrapped(err)) is None


def test_markers_split_output_into_blocks() -> None:
    scanner = MarkerScanner(TOKEN)
    mark = b"\nRT:" + TOKEN.encode()
    stream = PROMPT + mark + b":3:O\naGVsbG8=\n" + mark + b":3:E\n" + mark + b":3:Z:0:abc:def\r\n"
    # Fed in slices that cut markers in half.
    markers = []
    for i in range(0, len(stream), 7):
        markers += scanner.feed(stream[i : i + 7])
    assert [(m.seq, m.kind, m.fields) for m in markers] == [
        (3, "O", ()),
        (3, "E", ()),
        (3, "Z", ("0", "abc", "def")),
    ]
    assert base64_payload(markers[1].before) == b"hello"


def test_markers_of_another_console_are_not_markers() -> None:
    scanner = MarkerScanner(TOKEN)
    assert scanner.feed(b"\nRT:fedcba9876543210:1:K\n") == []


def test_nothing_typed_at_the_console_contains_a_marker() -> None:
    # Echoed input must never be taken for an answer: the letters RT are printed from
    # octal escapes by the far side.
    marker = f"RT:{TOKEN}".encode()
    assert marker not in bootstrap_line(TOKEN)
    assert marker not in boot_message(TOKEN)
    assert TOKEN in agent_text(TOKEN)


def test_bootstrap_line_is_one_short_line_with_nothing_a_shell_expands_early() -> None:
    line = bootstrap_line(TOKEN)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert len(line) < 512
    assert b"!" not in line  # history expansion in interactive bash and csh


def test_request_announces_exact_block_lengths_and_hashes() -> None:
    request = Request.of("echo hi", ["a b", "it's", "\n"], b"\x00\xff")
    encoded = request.encode(7, with_script=True)
    header, _, blocks = encoded.partition(b"\n")
    assert len(header) + 1 == HEADER_SIZE  # read with an exact read, never `read`
    words = header.split()
    assert words[:2] == [b"Q", b"7"]
    lengths = [int(words[3]), int(words[5]), int(words[7])]
    assert sum(lengths) == len(blocks)
    # Hashes are of the base64 text as sent, which the agent checks before decoding.
    script_block = base64.encodebytes(b"echo hi").rstrip(b"\n")
    assert blocks.startswith(script_block)
    assert words[2].decode() == hashlib.sha256(script_block).hexdigest()
    cached = request.encode(8, with_script=False).split(b"\n", 1)[0].split()
    assert cached[3] == b"0"
