"""`rtrain status` and `rtrain tail` in their plain forms, without loading typer.

Scripts poll status in loops and people tail often, so start-up is most of what these cost.
The plain forms are answered here:

    status HOST RUN [--json|-j]
    tail HOST RUN [--json|-j] [--follow|--no-follow]

Anything else (another option, `--help`, `--`) goes to typer. A warm daemon of this version
is asked through DaemonClient, which loads no msgspec (nor what starting a daemon needs,
unless it must start or replace one). The checks, the printing and the error mapping
are the typer commands' own, so output and exit status are the same either way.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from typing import Any

_JSON_FLAGS = ("--json", "-j")
_FOLLOW_FLAGS = {"--follow": True, "--no-follow": False}


def try_fast_path(argv: list[str]) -> bool:
    """Handle `argv` and return True, or return False to let typer handle it."""
    if not argv or argv[0] not in ("status", "tail"):
        return False
    command, words = argv[0], []
    json, follow = False, True
    for arg in argv[1:]:
        if arg in _JSON_FLAGS:
            json = True
        elif command == "tail" and arg in _FOLLOW_FLAGS:
            follow = _FOLLOW_FLAGS[arg]  # the last one wins, as in click
        elif arg.startswith("-"):
            return False
        else:
            words.append(arg)
    if len(words) != 2:
        return False
    host, run_id = words
    _end_as_typer_does(lambda: _answer(command, host, run_id, json, follow))
    return True


def _answer(command: str, host: str, run_id: str, json: bool, follow: bool) -> None:
    from .cli.input_checks import check
    from .cli.output import errors_as_json, friendly_errors

    errors_as_json(json)
    check(host=host, run_id=run_id)
    friendly_errors(_ask)(command, host, run_id, json, follow)


def _ask(command: str, host: str, run_id: str, json: bool, follow: bool) -> None:
    from .daemon_client import DaemonClient

    with DaemonClient.connect() as client:
        if command == "status":
            from .cli.status_view import show_status

            show_status(client, host, run_id, None, json)
        else:
            from .cli.log_follow import follow_log

            follow_log(client, host, run_id, None, 0, json, follow)


def _end_as_typer_does(answer: Callable[[], None]) -> None:
    """typer's main ends Ctrl-C with a silent exit 130, and a closed stdout (`| head`) with a
    silent exit 1; so does this path, or the two could be told apart."""
    try:
        answer()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        sys.stdout = _PipeGone(sys.stdout)
        sys.stderr = _PipeGone(sys.stderr)
        raise SystemExit(1) from None


class _PipeGone:
    """A stream whose reader may have gone: flushing what is left at exit says nothing."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            if error.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
