"""An OSError from this machine's own disk (where a fetch lands, what a start ships) is the
user's to fix: one sentence with the path and the reason, never an internal error."""

from __future__ import annotations

from rtrain.protocol.errors import Kind, RpcError, app_error


def refused(error: OSError, doing: str) -> RpcError:
    """`doing` is what was tried, e.g. "create the directory /proc/nope"."""
    reason = error.strerror or str(error)
    return app_error(Kind.LOCAL_IO, f"cannot {doing}: {reason}.", path=error.filename)


def refused_anywhere(error: OSError) -> RpcError:
    """For an OSError no operation foresaw: its path and reason still say what happened."""
    if error.filename2:  # a rename or a link: both ends matter
        return refused(error, f"move {error.filename} to {error.filename2} on this machine")
    where = f" {error.filename}" if error.filename else ""
    return refused(error, f"use{where} on this machine")
