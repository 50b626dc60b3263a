"""`rtrain pools`: each pool of config.toml, its hosts' free GPUs now, and its queue."""

from __future__ import annotations

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .describe import table
from .output import friendly_errors, note, print_json
from .shared_options import JsonOpt


@friendly_errors
def pools(json: bool = JsonOpt) -> None:
    """List the pools of config.toml (`[pools.NAME] hosts = [...]`): each host's free GPUs
    as asked now (unreachable ones say why), and the runs queued, first to go first."""
    with DaemonClient.connect() as client:
        found = client.call(requests.pools_list()).pools
    if json:
        print_json(found)
        return
    if not found:
        note('no pools: add [pools.NAME] hosts = ["HOST", ...] to config.toml.')
        return
    for index, pool in enumerate(found):
        if index:
            print()
        print(f"@{pool.name}")
        rows = [
            [host.alias, f"{host.gpus_free}/{host.gpus_total} free", ""]
            if host.reachable
            else [host.alias, "unreachable", host.reason or ""]
            for host in pool.hosts
        ]
        print(_indented(table(["HOST", "GPUS", ""], rows)))
        if pool.queue:
            queue = [[run.run_id, run.reason or ""] for run in pool.queue]
            print(_indented(table(["QUEUED", "WAITING FOR"], queue)))
        else:
            print("  nothing queued")


def _indented(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
