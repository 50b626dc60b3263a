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
    tty = sys.stdout.isatty()
    away = False  # the host stopped answering, and the user was told
    line_open = False  # the terminal's cursor is not at the start of a line

    def end_line() -> None:
        nonlocal away
        if away and not json:
            sys.stderr.write("\n")
        away = False

    def on_log(method: str, params: Any) -> None:
        nonlocal away, line_open
        if method == "run/reconnecting":
            if json:
                print_json({"type": "reconnecting", **params})
            else:
                if line_open:
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                    line_open = False
                # Said once, then a dot per further try, so a long wait stays one line.
                sys.stderr.write("." if away else f"reconnecting to {host}…")
                sys.stderr.flush()
            away = True
            return
        if method == "run/waiting":
            if json:
                print_json({"type": "waiting", **params})
            else:
                note(f"{run_id} on {host} is queued: {params.reason}; waiting for it to start…")
            return
        if method != "run/log":
            return
        end_line()
        if json:
            print_json({"type": "log", **params})
        elif tty:
            text = safe_for_terminal(params.text)
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()
                line_open = not text.endswith("\n")
        else:
            # Piped: the log's own bytes, whatever they are.
            sys.stdout.buffer.write(chunk_bytes(params))
            sys.stdout.buffer.flush()

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
        result = client.call(call, on_notification=on_log)
    except KeyboardInterrupt:
        end_line()
        client.close()
        if line_open:
            sys.stdout.write("\n")
            sys.stdout.flush()
        note(
            f"\ndetached; {run_id} keeps running on {host}.\n"
            f"  reattach: rtrain tail {host} {run_id}\n  stop:     rtrain stop {host} {run_id}"
        )
        raise SystemExit(130) from None
    except BaseException:
        end_line()
        raise
    end_line()
    run = result.run
    if line_open:
        sys.stdout.write("\n")  # a bar left mid-line: the last word starts on a line of its own
        sys.stdout.flush()
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
