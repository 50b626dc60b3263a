"""A start across hosts (`rtrain start h1,h2 --nodes 2`): the node list judged before any SSH."""

from __future__ import annotations

import re

from rtrain.daemon.launchers import registry as launchers
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.launcher_options import NodesOptions
from rtrain.protocol.messages import StartParams

from .command_template import TORCHRUN_WORD
from .context import DaemonState

# A host name or an IPv4 address: what torchrun's `--rdzv-endpoint` takes before `:PORT`.
_ADDRESS = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")


def node_hosts(ops: DaemonState, p: StartParams) -> tuple[str, ...]:
    """Every node's host, node 0 first; `(p.host,)` for a run on one host. Refuses, in one
    sentence, a list with duplicates, hosts on different launchers, a `--nodes` that does
    not match the list, and what a run across hosts cannot be."""
    o = p.launcher
    if not isinstance(o, NodesOptions):
        return (p.host,)
    if not o.hosts:
        if o.master_addr is not None:
            raise _refused("--master-addr is for a run across hosts (HOST1,HOST2 --nodes 2).")
        raise _refused("a run across hosts names its hosts (HOST1,HOST2 --nodes 2).")
    hosts = tuple(validation.host(h) for h in o.hosts)
    listed = ",".join(hosts)
    if hosts[0] != p.host:
        raise _refused(f"the run is recorded under its first host: host must be {hosts[0]}.")
    repeated = sorted({h for h in hosts if hosts.count(h) > 1})
    if repeated:
        raise _refused(
            f"{', '.join(repeated)} appears more than once in {listed}: each node is one host."
        )
    if len(hosts) < 2:
        raise _refused(f"a run across hosts needs two hosts or more, not only {listed}.")
    if o.nodes != len(hosts):
        raise _refused(
            f"--nodes {o.nodes} does not match the {len(hosts)} hosts of {listed}; "
            f"give --nodes {len(hosts)}."
        )
    scheduled = [h for h in hosts if launchers.for_host(ops.hosts.config.host(h)).scheduler]
    if scheduled:
        raise _refused(
            f"the hosts of {listed} run on different launchers: {', '.join(scheduled)} "
            "submit batch jobs to Slurm (ask Slurm for --nodes there); a run across hosts "
            "needs hosts that run processes over SSH."
        )
    if p.command is not None and TORCHRUN_WORD not in p.command:
        raise _refused(
            "a run across hosts runs torchrun on each node: put {torchrun} where torchrun "
            "goes in the command (e.g. -- '{torchrun}' train.py)."
        )
    reverse_problem = launchers.across_hosts().reverse_forward_problem(p.host, len(hosts))
    if p.reverse and reverse_problem:
        raise _refused(reverse_problem)
    if o.master_addr is not None and not _ADDRESS.fullmatch(o.master_addr):
        raise _refused(f"--master-addr {o.master_addr!r} is not a host name or an address.")
    return hosts


def _refused(sentence: str) -> Exception:
    return app_error(Kind.INVALID_COMMAND, sentence)
