"""Printing a run's log as it streams, then its final state: `tail`, `start` (which follows)
and the start-up fast path share this (no typer here)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rtrain.client.run_state_text import state_text
from rtrain.protocol import requests
from rtrain.protocol.run_states import is_live

from .after_run_view import follow_after_run
from .describe import outcome_exit_code
from .output import note, print_json
from .terminal_text import safe_for_terminal

if TYPE_CHECKING:
    from rtrain.client.daemon_client import DaemonClient


def follow_log(
    client: DaemonClient,
    host: str,
    run_id: str,
    workdir: str | None,
    offset: int,
    json: bool,
    follow: bool = True,
    lines: int | None = None,
    node: int | None = None,
) -> None:
    """Stream the log (from `offset`, or its last `lines` lines); Ctrl-C detaches (the run
    goes on); exit with the run's outcome."""
    printer = _LogPrinter(host, run_id, json)
    call = requests.run_tail(
        host=host,
        run_id=run_id,
        workdir=workdir or None,
        offset=offset,
        follow=follow,
        lines=lines,
        node=node,
    )
    try:
        result = client.call(call, on_notification=printer.on_notification)
    except KeyboardInterrupt:
        printer.end_line()
        client.close()
        printer.close_line()
        note(
            f"\ndetached; {run_id} keeps running on {host}.\n"
            f"  reattach: rtrain tail {host} {run_id}\n  stop:     rtrain stop {host} {run_id}"
        )
        raise SystemExit(130) from None
    except BaseException:
        printer.end_line()
        raise
    printer.end_line()
    # A bar left mid-line: the last word starts on a line of its own.
    printer.close_line()
    _say_the_end(client, host, run_id, json, follow, result)


class _LogPrinter:
    """Prints the tail's notifications as they come, remembering where the terminal stands:
    whether the host stopped answering (and the user was told), and whether the cursor is
    in the middle of a line."""

    def __init__(self, host: str, run_id: str, json: bool) -> None:
        self.host, self.run_id, self.json = host, run_id, json
        self.tty = sys.stdout.isatty()
        self.away = False
        self.line_open = False

    def end_line(self) -> None:
        if self.away and not self.json:
            sys.stderr.write("\n")
        self.away = False

    def close_line(self) -> None:
        if self.line_open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.line_open = False

    def on_notification(self, method: str, params: Any) -> None:
        if method == "run/reconnecting":
            self._reconnecting(params)
        elif method == "run/waiting":
            if self.json:
                print_json({"type": "waiting", **params})
            else:
                note(
                    f"{self.run_id} on {self.host} is queued: {params.reason}; "
                    "waiting for it to start…"
                )
        elif method == "run/log":
            self._log(params)

    def _reconnecting(self, params: Any) -> None:
        if self.json:
            print_json({"type": "reconnecting", **params})
        else:
            self.close_line()
            # Said once, then a dot per further try, so a long wait stays one line.
            sys.stderr.write("." if self.away else f"reconnecting to {self.host}…")
            sys.stderr.flush()
        self.away = True

    def _log(self, params: Any) -> None:
        self.end_line()
        if self.json:
            print_json({"type": "log", **params})
        elif self.tty:
            text = safe_for_terminal(params.text)
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()
                self.line_open = not text.endswith("\n")
        else:
            # Piped: the log's own bytes, whatever they are.
            sys.stdout.buffer.write(chunk_bytes(params))
            sys.stdout.buffer.flush()


def _say_the_end(
    client: DaemonClient, host: str, run_id: str, json: bool, follow: bool, result: Any
) -> None:
    """The run's state once the tail ended; exit with its outcome once it is over."""
    run = result.run
    if json:
        print_json({"type": "end", "offset": result.offset, "run": run})
    else:
        note(f"{run_id} on {host}: {state_text(run)}")
    if not is_live(run.state):
        code = outcome_exit_code(run)
        if follow and run.after is not None:
            after = follow_after_run(client, host, run_id, json)
            if code == 0 and after is not None and after.stage == "failed":
                code = 1  # the run completed, but what was to follow it did not happen
        raise SystemExit(code)


def chunk_bytes(params: Any) -> bytes:
    """The exact bytes a `run/log` chunk carries."""
    if params.base64 is not None:
        import base64

        return base64.b64decode(params.base64)
    return str(params.text).encode()
