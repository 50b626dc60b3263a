"""`rtrain protocol ...`: the published description of the daemon's protocol."""

from __future__ import annotations

import sys

import typer

from .usage import PlainUsage

app = typer.Typer(help="The daemon's JSON-RPC protocol.", no_args_is_help=True)


@app.command(cls=PlainUsage)
def schema() -> None:
    """Print the JSON Schema of every message (as in docs/protocol.schema.json)."""
    from rtrain.protocol.schema import protocol_schema_json

    sys.stdout.write(protocol_schema_json())
