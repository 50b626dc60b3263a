"""The words far-side scripts fail with are one enum, decoded once in the contract: every
word a script prints is an ErrorWord, every ErrorWord is printed by some script, and no other
daemon module matches error words or the system's text itself."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

import rtrain.daemon
from rtrain.daemon.remote.contract.answers import Lines
from rtrain.daemon.remote.error_words import ErrorWord, FarError, far_error

DAEMON = Path(rtrain.daemon.__file__).parent
SCRIPTS = DAEMON / "remote" / "scripts"
# Words the contract derives, never printed by a script.
DERIVED = {ErrorWord.DISK_FULL, ErrorWord.OTHER}
# remove.sh fails with the state of a run that still runs (`fail "$E_REFUSED" "$RS_STATE"`).
STATE_WORDS = {ErrorWord.RUNNING, ErrorWord.QUEUED}


def _printed_words() -> set[str]:
    words = set()
    launchers = DAEMON.glob("launchers/*/scripts/*.sh")
    for path in [*SCRIPTS.glob("**/*.sh"), *launchers, DAEMON / "ssh" / "console_agent.py"]:
        text = path.read_text()
        words |= set(re.findall(r'\bfail "\$E_[A-Z_]+" ([a-z_]+)', text))
        words |= set(re.findall(r"\bemit error ([a-z_]+)", text))
    return words


def test_every_word_a_script_prints_is_an_error_word() -> None:
    printed = _printed_words()
    assert printed, "no script fails with a word any more?"
    assert printed - {w.value for w in ErrorWord} == set()


def test_every_error_word_is_printed_by_a_script() -> None:
    printed = _printed_words()
    never = {w for w in ErrorWord if w.value not in printed} - DERIVED - STATE_WORDS
    assert never == set()


def test_a_line_decodes_to_its_word_and_keeps_what_it_said() -> None:
    error = Lines(b"error\tpath_outside_run\tdata/link\n").error()
    assert error == FarError(
        word=ErrorWord.PATH_OUTSIDE_RUN, args=("data/link",), said="path_outside_run data/link"
    )
    assert (error.arg, str(error)) == ("data/link", "path_outside_run data/link")
    assert Lines(b"ok\n").error() is None


def test_a_full_disk_is_read_from_the_system_s_words_once() -> None:
    error = far_error(["write", "/r/x: No space left on device"])
    assert error is not None and error.word == ErrorWord.DISK_FULL
    assert error.args == ("/r/x: No space left on device",)


def test_a_word_this_version_does_not_know_is_other_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        error = far_error(["quantum_flux", "x"])
    assert error is not None and (error.word, str(error)) == (ErrorWord.OTHER, "quantum_flux x")
    assert "quantum_flux" in caplog.text
    # A script that printed a derived word is not believed either.
    assert far_error(["disk_full"]) == FarError(word=ErrorWord.OTHER, said="disk_full")


def test_no_other_daemon_module_matches_error_words_or_the_system_s_text() -> None:
    offenders = []
    for path in DAEMON.rglob("*.py"):
        if path.name in ("contract.py", "error_words.py") or "demo_trainer" in path.parts:
            continue
        text = path.read_text()
        if "No space" in text:
            offenders.append(f"{path.name}: reads the system's text for a full disk")
        if re.search(r"""\.error\s*(\[|==\s*\[|\+)|error\[:1\]\s*==""", text):
            offenders.append(f"{path.name}: matches an error line's words itself")
    assert offenders == []
