"""`rtrain gc`: free what cached inputs and cut transfers hold."""

from __future__ import annotations

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests
from rtrain.protocol.byte_sizes import human_bytes

from .input_checks import check
from .output import friendly_errors, print_json
from .shared_options import HostArg, JsonOpt


@friendly_errors
def gc(
    host: str = HostArg,
    workdir: str | None = typer.Option(
        None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
    ),
    json: bool = JsonOpt,
) -> None:
    """Remove inputs and environments cached on HOST that no run uses any more, and cut
    uploads."""
    check(host=host, workdir=workdir)
    with DaemonClient.connect() as client:
        result = client.call(requests.host_gc(host=host, workdir=workdir))
    if json:
        print_json(result)
    else:
        print(
            f"freed {human_bytes(result.freed_bytes)} on {host}: {result.entries} cached "
            f"input(s) no run uses, {result.partials} cut upload(s), "
            f"{result.environments_removed} environment(s) no run uses"
        )
        if result.local_partials or result.local_freed_bytes:
            print(
                f"freed {human_bytes(result.local_freed_bytes)} here: partial data of "
                f"{result.local_partials} cut fetch(es) from {host}"
            )
