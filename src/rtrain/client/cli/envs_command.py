"""`rtrain envs`: the run environments cached on a host."""

from __future__ import annotations

import time

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests
from rtrain.protocol.byte_sizes import human_bytes
from rtrain.protocol.durations import human_duration

from .input_checks import check
from .output import friendly_errors, print_json
from .shared_options import HostArg, JsonOpt


@friendly_errors
def envs(
    host: str = HostArg,
    workdir: str | None = typer.Option(
        None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
    ),
    json: bool = JsonOpt,
) -> None:
    """List the environments built on HOST from --requirements: key, size, last use, runs."""
    check(host=host, workdir=workdir)
    with DaemonClient.connect() as client:
        result = client.call(requests.host_envs(host=host, workdir=workdir))
    if json:
        print_json(result)
        return
    if not result.environments and not result.building:
        print(f"no environments on {host}")
        return
    print(f"{'KEY':<20}  {'SIZE':>9}  {'LAST USED':<12}  {'BUILT WITH':<16}  RUNS")
    for env in result.environments:
        used = (
            "-" if env.last_used is None else f"{human_duration(time.time() - env.last_used)} ago"
        )
        built = env.tool or "-"
        if env.build_seconds is not None:
            built += f" in {env.build_seconds:.0f} s"
        runs = ", ".join(env.used_by) if env.used_by else "none (rtrain gc removes it)"
        print(f"{env.key:<20}  {human_bytes(env.size_bytes):>9}  {used:<12}  {built:<16}  {runs}")
    for key in result.building:
        print(f"{key:<20}  {'-':>9}  {'-':<12}  {'building now':<16}  -")
