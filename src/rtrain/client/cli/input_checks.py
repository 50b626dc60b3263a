"""Refusing bad input in the CLI itself, before the daemon (or any ssh) is involved."""

from __future__ import annotations

from rtrain.protocol import validation
from rtrain.protocol.errors import RpcError

from .exit_codes import ClientKind
from .output import fail

_CHECKS = {
    # `@NAME` (a pool) is judged by the daemon where a command takes one (docs/pools.md).
    "host": validation.host_or_pool,
    "run_id": validation.run_id,
    "workdir": validation.workdir,
    "python": validation.python,
}


def check(**values: str | None) -> None:
    """One sentence on stderr and exit 2 for the first value that is not usable."""
    try:
        for name, value in values.items():
            if value is not None:
                _CHECKS[name](value)
    except RpcError as error:
        fail(error.message, kind=error.kind or ClientKind.USAGE)
