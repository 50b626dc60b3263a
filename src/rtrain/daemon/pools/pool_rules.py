"""What a pool places: one run on one host that runs its own runs. A run across hosts
(`--nodes N`), a batch job's options, and a Slurm host listed in the pool are refused before
any SSH, each in one sentence that says what to do instead (docs/pools.md)."""

from __future__ import annotations

from collections.abc import Sequence

from rtrain.daemon.user_config import UserConfig
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.launcher_options import NodesOptions, SlurmOptions
from rtrain.protocol.messages import StartParams


def check_poolable(name: str, hosts: Sequence[str], p: StartParams, config: UserConfig) -> None:
    """Raises, in one sentence, what of `p` or of the pool a pool cannot place."""
    o = p.launcher
    if isinstance(o, NodesOptions) or (isinstance(o, SlurmOptions) and o.nodes > 1):
        nodes = max(o.nodes, 2)
        listed = ",".join(hosts[:nodes]) if len(hosts) >= nodes else "HOST1,HOST2"
        raise app_error(
            Kind.INVALID_HOST,
            f"a pool places a run on one host, and --nodes {nodes} asks for {nodes}; name "
            f"the hosts yourself (rtrain start {listed} --nodes {nodes}), or run {nodes} "
            f"runs in @{name}.",
        )
    if isinstance(o, SlurmOptions):
        raise app_error(
            Kind.INVALID_HOST,
            f"Slurm options (--partition, --time, ...) are for a Slurm host, and @{name} places "
            "runs on hosts that run their own; start the job on the Slurm host by name.",
        )
    batch = [alias for alias in hosts if config.host(alias).scheduler not in (None, "none")]
    if batch:
        raise app_error(
            Kind.INVALID_HOST,
            f"pool {name} lists {', '.join(batch)}, a Slurm host, whose scheduler queues and "
            f"places jobs itself; take it out of [pools.{name}] in config.toml and start "
            "jobs on it by name.",
        )
