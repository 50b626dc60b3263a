"""What every operation shares: the registry, the hosts, and telling clients about changes."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from rtrain.daemon.costs import priced_run
from rtrain.daemon.guard_book import GuardBook
from rtrain.daemon.hosts import HostPool
from rtrain.daemon.launchers import registry as launchers
from rtrain.daemon.launchers.launcher import Launcher
from rtrain.daemon.launchers.placement import Placement
from rtrain.daemon.launchers.torchrun.launcher import shown_command, uses_relay
from rtrain.daemon.metrics.store import MetricsStore
from rtrain.daemon.registry import Registry
from rtrain.daemon.ssh.host_address import resolved_hostname
from rtrain.daemon.ssh.options import ssh_config_file
from rtrain.daemon.transfer.lease import TransferLeases
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import DEFAULT_WORKDIR, RunInfo, RunNode
from rtrain.protocol.run_states import (
    HostSilent,
    advance,
    ending_of,
    is_billed,
    is_ended,
    next_state,
)

from .missing_torch import with_torch_hint

_log = logging.getLogger(__name__)


@dataclass
class DaemonState:
    """The daemon's state every operation shares, and the rules for recording a run."""

    registry: Registry
    hosts: HostPool
    publish: Callable[[RunInfo], None]
    # Tells subscribers a run is gone from the registry (`rtrain rm`).
    publish_removed: Callable[[RunInfo], None] = lambda run: None
    # (host, run_id) of starts in progress: their inputs are still being shipped, so the far
    # side would call them "never launched"; nobody but the start itself decides their state.
    starting: set[tuple[str, str]] = field(default_factory=set)
    # What the runs' logs said (progress, series) and the hosts' GPUs, for the views.
    metrics: MetricsStore = field(default_factory=MetricsStore)
    # By host, the python the last preflight there found torch in: a run that fails for
    # want of torch names it (missing_torch.py).
    torch_pythons: dict[str, str] = field(default_factory=dict)
    # This daemon's transfer leases on the hosts, which their guards count as busy.
    leases: TransferLeases = field(default_factory=TransferLeases)
    # The hosts' guards as last read, and the ones config.toml asks the daemon to arm.
    guards: GuardBook = field(default_factory=GuardBook)

    def record(
        self,
        run: RunInfo,
        metrics_changed: bool = False,
        publish: bool = True,
        stop_done: bool = False,
    ) -> RunInfo:
        """Store `run`; tell subscribers when anything they show changed (its state, or, with
        `metrics_changed`, what its log said), unless `publish` is False. The one way a
        run's state is recorded: through the table of protocol/run_states.py, except that
        `stop_done` (a person's stop of a run across hosts, finished on its last node)
        records `stopped` over a failure its other nodes showed while the stop was pending:
        they failed because their peers were being stopped (docs/multinode.md)."""
        if run.created_at and run.started_at and run.started_at < run.created_at:
            # The host's clock says when it started, in whole seconds (`date +%s`) and maybe
            # skewed; a run never starts before rtrain created it, so no answer says so.
            run = msgspec.structs.replace(run, started_at=run.created_at)
        before = self.registry.get(run.host, run.run_id)
        # Every state a run takes goes through the table (protocol/run_states.py): a look
        # that would move a settled attempt elsewhere is not recorded.
        new_attempt = before is not None and _attempt_number(before) != _attempt_number(run)
        state = advance(before.state if before else None, run.state, new_attempt or stop_done)
        if before is not None and state != run.state:
            _log.warning(
                "%s/%s: %s may not become %s; kept", run.host, run.run_id, state, run.state
            )
            return before
        run = with_latest_attempt(_replace(run, ending=ending_of(run.state, run.ending)))
        run = with_torch_hint(run, self.torch_pythons.get(run.host))
        self.registry.upsert(run)
        if publish and (
            metrics_changed
            or before is None
            or (before.state, before.exit_code, before.reason, before.stalled_since)
            != (run.state, run.exit_code, run.reason, run.stalled_since)
        ):
            self.publish(self.annotate(run))
        return run

    def annotate(self, run: RunInfo) -> RunInfo:
        """`run` as clients see it: with what its log said, what it has cost so far, and how
        its tracker files were last synced."""
        synced = self.registry.syncs_of(run.host, run.run_id)
        if synced:
            run = msgspec.structs.replace(run, synced=synced)
        annotated = self.metrics.annotate(run)
        if run.command and uses_relay(run.command):
            annotated = msgspec.structs.replace(annotated, command=shown_command(run.command))
        if annotated.progress is None and not annotated.latest and is_ended(run.state):
            # A daemon restarted since the run ended has read none of its log: what was kept.
            progress, latest = self.registry.run_metrics(run.host, run.run_id)
            if progress is not None or latest:
                annotated = msgspec.structs.replace(annotated, progress=progress, latest=latest)
        return priced_run(annotated, self.price(run.host), time.time())

    def keep_metrics(self, host: str, run_id: str) -> None:
        """Keep what the ended run's log said (progress, latest values) past a restart."""
        progress = self.metrics.progress(host, run_id)
        latest = self.metrics.latest(host, run_id)
        if progress is not None or latest:
            if progress is not None:
                progress = msgspec.structs.replace(progress, eta=None)
            self.registry.set_run_metrics(host, run_id, progress, latest)

    def price(self, host: str) -> float | None:
        """What an hour of `host` costs: as `hosts/price` set it, else config.toml's."""
        set_price = self.registry.host_price(host)
        if set_price is not None:
            return set_price
        return self.hosts.config.host(host).price_per_hour

    def known(self, host: str, run_id: str) -> RunInfo | None:
        return self.registry.get(host, run_id)

    def run_dir(self, host: str, run_id: str, workdir: str | None) -> str:
        """Where the run lives on the host: as recorded, else under `workdir` (or the default)."""
        validation.host(host)
        validation.run_id(run_id)
        known = self.registry.get(host, run_id)
        if workdir is None and known is not None and known.remote_dir:
            return known.remote_dir
        # An explicit empty workdir is refused like any other bad one, not taken as default.
        return f"{self.host_workdir(host, workdir)}/{run_id}"

    async def transport(self, host: str) -> Transport:
        """The host's transport: its connection, made (again) where there is none."""
        return await self.hosts.get(host)

    def arm_configured_guard(self, host: str) -> None:
        """Arm the guard config.toml asks for on `host` (idle_stop with terminate), in the
        background and once a daemon: as a run there is launched (wiring's publish), and
        before `host/guard` acts. Nothing else walks into the guard's scripts."""
        settings = self.hosts.config.host(host)
        idle_seconds = settings.idle_stop_seconds
        if idle_seconds is None or settings.terminate is None:
            return
        # A configured workdir that is no workdir fails the requests that use it, not this.
        with contextlib.suppress(RpcError):
            workdir = validation.workdir(settings.workdir or DEFAULT_WORKDIR)
            self.guards.reached(
                host,
                self.hosts.get,
                workdir,
                idle_seconds,
                settings.terminate,
                settings.stalled_idle,
            )

    def host_workdir(self, host: str, workdir: str | None) -> str:
        """The work directory a host-wide request means: its own, the host's configured
        one, else rtrain's default."""
        chosen = workdir if workdir is not None else self.hosts.config.host(host).workdir
        return validation.workdir(chosen if chosen is not None else DEFAULT_WORKDIR)

    def launcher_of(self, run: RunInfo) -> Launcher:
        """The launcher `run` recorded (with its nodes, for a run across hosts)."""
        return self.run_launcher(run.host, run.launcher, run.command, run.nodes)

    def run_launcher(
        self,
        host: str,
        recorded: str | None,
        command: Sequence[str] | None = None,
        nodes: Sequence[RunNode] = (),
        *,
        again: bool = False,
    ) -> Launcher:
        """The launcher a run recorded (launchers.for_run), placed on `host`."""
        settings = self.hosts.config.host(host)
        chosen = launchers.for_run(recorded, settings, command, nodes, again=again)
        return chosen.placed(self.placement(host, nodes))

    def launcher(self, host: str, command: Sequence[str] | None = None) -> Launcher:
        """How a new run is run on `host` (launchers.for_host)."""
        settings = self.hosts.config.host(host)
        return launchers.for_host(settings, command).placed(self.placement(host))

    def nodes_launcher(self, nodes: Sequence[RunNode], master_addr: str | None = None) -> Launcher:
        """The launcher of a run across `nodes` (node 0 first), each reached as any host is."""
        return launchers.across_hosts().placed(self.placement(nodes[0].host, nodes, master_addr))

    def placement(
        self, host: str, nodes: Sequence[RunNode] = (), master_addr: str | None = None
    ) -> Placement:
        """What a launcher of runs on `host` may use: the host's settings, and a way to reach
        any host (launchers arm no guard: a run's launch does, see start)."""

        async def resolve(alias: str) -> str:
            return await resolved_hostname(alias, ssh_config_file(self.hosts.config.ssh_config))

        return Placement(
            host=host,
            settings=self.hosts.config.host(host),
            connect=self.hosts.get,
            resolve=resolve,
            nodes=tuple(nodes),
            master_addr=master_addr,
        )

    def mark_unknown(self, host: str, run_id: str, error: RpcError) -> RunInfo:
        """The host cannot be asked: the run's state is unknown, and here is why."""
        known = self.registry.get(host, run_id)
        state = next_state(HostSilent())
        base = known or RunInfo(host=host, run_id=run_id, state=state)
        reason = error.message
        if self.registry.pending_stop(host, run_id) is not None:
            reason = f"stop pending: {reason}"  # some nodes may still train
        run = _replace(base, state=state, reason=reason)
        if known is not None:
            self.record(run)
        return run


def launcher_group(ops: DaemonState, run: RunInfo) -> tuple[bool, str]:
    """Which runs of a host one far-side command asks about together: the host's own
    processes (watch.sh), a scheduler's jobs (its status), and each run across hosts alone
    (its launcher is its nodes')."""
    return ops.launcher_of(run).states_from_status, run.run_id if run.nodes else ""


def _attempt_number(run: RunInfo) -> int:
    return run.attempts[-1].number if run.attempts else 1


def with_latest_attempt(run: RunInfo) -> RunInfo:
    """`run` with its latest attempt saying what the run itself says."""
    if not run.attempts:
        return run
    last = run.attempts[-1]
    ended = is_ended(run.state)
    # Queued (again): billed from when it next runs. A run whose first step queues it for
    # GPUs may look running for the moment before it says it waits.
    running_at = None if run.state == "queued" else last.running_at
    if running_at is None and is_billed(run.state):
        # Billed from when it left its queue; an end seen with no run between bills from
        # the launch (the daemon was away: more, rather than nothing).
        seen_leaving = last.state == "queued" and run.state == "running"
        running_at = now() if seen_leaving else (last.started_at or run.started_at or now())
    latest = msgspec.structs.replace(
        last,
        state=run.state,
        exit_code=run.exit_code,
        reason=run.reason,
        started_at=run.started_at or last.started_at,
        ended_at=(last.ended_at or now()) if ended else None,
        running_at=running_at,
    )
    if latest == last:
        return run
    return _replace(run, attempts=[*run.attempts[:-1], latest])


def _replace(run: RunInfo, **changes: object) -> RunInfo:
    return msgspec.structs.replace(run, **changes)


def now() -> float:
    return round(time.time(), 3)


def chosen(explicit: str | None, host_default: str | None, default: str) -> str:
    """A request's explicit value, else the host's from the user config, else rtrain's."""
    if explicit is not None:
        return explicit
    return host_default if host_default is not None else default
