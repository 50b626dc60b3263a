"""The --secret names a user gives, checked and read from this environment."""

from __future__ import annotations

import os

from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError

from .exit_codes import ClientKind
from .output import fail


def local_secrets(names: list[str]) -> dict[str, str]:
    secrets = {}
    for name in names:
        try:
            validation.secret_name(name)
        except RpcError as error:
            fail(error.message, kind=error.kind or ClientKind.USAGE)
        if name not in os.environ:
            fail(
                f"--secret {name}: no such variable in your environment; export it first.",
                kind=Kind.INVALID_SECRET,
            )
        secrets[name] = os.environ[name]
    return secrets
