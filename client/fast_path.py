"""`rtrain status HOST RUN [--json]` without loading typer.

Scripts poll status in loops, so its start-up is most of its cost: this path answers the
plain forms directly (about 0.1 s less). Anything else, `--help` included, goes to typer.
"""

from __future__ import annotations

_JSON_FLAGS = ("--json", "-j")


def try_fast_path(argv: list[str]) -> bool:
    """Handle `argv` and return True, or return False to let typer handle it."""
    if not argv or argv[0] != "status":
        return False
    words = [a for a in argv[1:] if a not in _JSON_FLAGS]
    if len(words) != 2 or any(w.startswith("-") for w in words):
        return False
    from .cli.output import friendly_errors
    from .cli.status_view import show_status

    friendly_errors(show_status)(words[0], words[1], None, len(words) != len(argv) - 1)
    return True
