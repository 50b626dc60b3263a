"""The method table: every JSON-RPC request the daemon answers and its handler, in one place
(tests/daemon/test_method_table.py checks it against the protocol's list), and the
composition of the daemon's parts that the handlers use."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.restart import restart
from rtrain.daemon.operations.start import start
from rtrain.daemon.operations.terminate import terminate_host
from rtrain.daemon.pools.dispatcher import PoolDispatcher
from rtrain.daemon.run_retries import Retrier
from rtrain.daemon.trackers.sync import TrackerSyncs
from rtrain.daemon.trackers.tensorboard import TensorBoards
from rtrain.protocol import messages as m

from .after_run import AfterRuns
from .client_session import Handler
from .forwards import Forwards
from .handlers import ForwardHandlers, HostHandlers, RunHandlers
from .hosts import HostPool
from .monitor import Monitor
from .reverse_forwards import ReverseForwards
from .run_companions import RunCompanions
from .run_end_notify import RunEndNotify
from .run_events import RunEvents
from .run_waits import RunWaits
from .service import Service
from .user_config import ConfigError, UserConfig, load_user_config

log = logging.getLogger(__name__)

Closer = Callable[[], Awaitable[None]]


def wire_operations(service: Service) -> list[Closer]:
    """Builds the daemon's parts, sets `service.handlers`, starts what runs on its own, and
    returns what closes it all, in order."""
    config = _user_config(service)
    hosts = HostPool(service.runtime_dir, service.registry, config)
    run_ends = RunEndNotify(config, service.registry.list())
    events = RunEvents(service, run_ends)
    ops = DaemonState(service.registry, hosts, events.changed, publish_removed=events.removed)
    syncs = TrackerSyncs(ops)
    waits = RunWaits(ops)
    forwards = Forwards(ops, lambda: _forwards_changed(service, forwarding))
    reverse_forwards = ReverseForwards(ops, lambda: _forwards_changed(service, forwarding))
    tensorboards = TensorBoards(ops, forwards)

    async def terminate(host: str) -> m.TerminateResult:
        return await terminate_host(ops, host, force=False)

    after_runs = AfterRuns(ops, terminate)
    monitor = Monitor(ops, service.poll_interval or config.poll_interval)
    companions = RunCompanions(start, restart, reverse_forwards, syncs)
    retrier = Retrier(ops, companions.restart, monitor.poke)
    pools = PoolDispatcher(ops, companions.start, monitor.poke)
    monitor.after_poll = pools.polled
    events.listen(
        ops, after_runs, retrier, waits, forwards, (reverse_forwards, syncs, tensorboards)
    )
    forwarding = ForwardHandlers(ops, monitor, forwards, reverse_forwards, tensorboards)
    service.annotate = ops.annotate
    service.handlers = method_table(
        service,
        {
            **RunHandlers(ops, monitor, waits, pools, companions).table(),
            **forwarding.table(),
            **HostHandlers(service, ops, monitor, pools).table(),
        },
    )
    monitor.start()
    after_runs.start()
    retrier.resume()
    syncs.resume()
    return [
        forwards.close_all,
        reverse_forwards.close_all,
        syncs.close,
        after_runs.close,
        retrier.close,
        monitor.close,
        pools.close,
        run_ends.close,
        hosts.close,
    ]


def _user_config(service: Service) -> UserConfig:
    """config.toml, or none when it cannot be read: a typo in it must not keep the daemon
    (and so every client) down; the daemon says so to every client instead."""
    try:
        return load_user_config()
    except ConfigError as error:
        log.error("ignoring the user config: %s", error)
        service.notices.append(
            f"The user config was ignored: {error}. Fix it, then run `rtrain daemon stop` so "
            "the next command starts a daemon that reads it."
        )
        return UserConfig()


def _forwards_changed(service: Service, forwarding: ForwardHandlers) -> None:
    """forwards/changed to every subscribed client: the forwards as they are now."""
    listed = m.ForwardsListResult(forwards=forwarding.all_forwards())
    for session in list(service.sessions):
        if session.subscribed:
            session.notify("forwards/changed", listed)


def method_table(service: Service, operations: dict[str, Handler]) -> dict[str, Handler]:
    """The daemon's own methods and the operations on runs and hosts, by method name."""
    return {
        "initialize": service.initialize,
        "shutdown": service.shutdown,
        "daemon/info": service.info,
        "daemon/stop": service.stop_daemon,
        "runs/list": service.runs_list,
        **operations,
    }
