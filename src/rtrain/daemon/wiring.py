"""The method table: every JSON-RPC request the daemon answers and its handler, in one place
(tests/daemon/test_method_table.py checks it against the protocol's list)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import msgspec

from rtrain.daemon.remote.contract import guard_scripts
from rtrain.protocol import messages as m
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.run_states import is_live

from .after_run import AfterRuns
from .client_session import Handler, RequestContext
from .costs import priced_host
from .forwards import Forwards
from .hosts import HostPool
from .monitor import Monitor
from .operations.context import Ops
from .operations.envs import envs
from .operations.fetch import fetch
from .operations.gc import gc
from .operations.guard import guard
from .operations.guard_book import guard_state
from .operations.metrics import metrics
from .operations.preflight import preflight
from .operations.remove import remove
from .operations.restart import restart
from .operations.retry import Retrier
from .operations.run_exec import run_exec
from .operations.run_shell import run_shell
from .operations.start import start
from .operations.status import status
from .operations.stop import stop
from .operations.tail import tail
from .operations.terminate import terminate_host
from .pools.dispatcher import PoolDispatcher, pool_name
from .reverse_forwards import ReverseForwards
from .run_end_notify import RunEndNotify
from .run_waits import RunWaits
from .service import Service
from .trackers.kernel import open_kernel
from .trackers.sync import TrackerSyncs, refuse_missing_packages, with_run_env
from .trackers.tensorboard import TensorBoards
from .user_config import ConfigError, UserConfig, load_user_config

log = logging.getLogger(__name__)


def wire_operations(service: Service) -> list[Callable[[], Awaitable[None]]]:
    try:
        config = load_user_config()
    except ConfigError as error:
        # A typo in the config must not keep the daemon (and so every client) down.
        log.error("ignoring the user config: %s", error)
        service.notices.append(
            f"The user config was ignored: {error}. Fix it, then run `rtrain daemon stop` so "
            "the next command starts a daemon that reads it."
        )
        config = UserConfig()
    hosts = HostPool(service.runtime_dir, service.registry, config)
    after_runs: AfterRuns | None = None
    retrier: Retrier | None = None
    waits: RunWaits | None = None
    forwards: Forwards | None = None
    reverse_forwards: ReverseForwards | None = None
    tensorboards: TensorBoards | None = None
    syncs: TrackerSyncs | None = None
    run_ends = RunEndNotify(config, service.registry.list())

    def publish(run: m.RunInfo) -> None:
        service.publish_run(run)
        if after_runs is not None:
            after_runs.seen(run)  # a run's end moves its --then-fetch/--then-terminate on
        if retrier is not None:
            retrier.seen(run)  # a run lost with retries left comes back (--retry)
        if waits is not None:
            waits.seen(run)
        run_ends.seen(run)  # config.toml's notify, once a run ends
        if reverse_forwards is not None:
            reverse_forwards.run_seen(run)  # a run's reverse forwards end with it
        if syncs is not None:
            syncs.seen(run)  # a run's end is its last tracker sync
        if is_live(run.state):
            ops.arm_configured_guard(run.host)  # a run launched: the host's guard watches

    def publish_removed(run: m.RunInfo) -> None:
        service.publish_run(run, removed=True)
        if waits is not None:
            waits.seen(run, removed=True)
        if forwards is not None:
            forwards.run_removed(run)
        if reverse_forwards is not None:
            reverse_forwards.run_seen(run, removed=True)
        if tensorboards is not None:
            tensorboards.run_removed(run)
        run_ends.forget(run)

    ops = Ops(service.registry, hosts, publish, publish_removed=publish_removed)
    syncs = TrackerSyncs(ops)
    waits = RunWaits(ops)

    def all_forwards(host: str | None = None) -> list[m.ForwardInfo]:
        assert forwards is not None and reverse_forwards is not None
        return [*forwards.listed(host), *reverse_forwards.listed(host)]

    def forwards_changed() -> None:
        listed = m.ForwardsListResult(forwards=all_forwards())
        for session in list(service.sessions):
            if session.subscribed:
                session.notify("forwards/changed", listed)

    forwards = Forwards(ops, forwards_changed)
    reverse_forwards = ReverseForwards(ops, forwards_changed)
    tensorboards = TensorBoards(ops, forwards)

    async def terminate(host: str) -> m.TerminateResult:
        return await terminate_host(ops, host, force=False)

    after_runs = AfterRuns(ops, terminate)
    monitor = Monitor(ops, service.poll_interval or config.poll_interval)
    retrier = Retrier(ops, restart, monitor.poke)
    pools = PoolDispatcher(ops, start, monitor.poke)
    monitor.after_poll = pools.polled
    service.annotate = ops.annotate

    async def do_preflight(p: m.PreflightParams, ctx: RequestContext) -> m.PreflightResult:
        return await preflight(ops, p)

    async def do_start(p: m.StartParams, ctx: RequestContext) -> m.StartResult:
        if p.sync:
            refuse_missing_packages(p.sync)
            p = with_run_env(p)
        if pool_name(p.host) is not None:
            return await pools.start(p, ctx)
        if p.sweep is not None:
            raise app_error(
                Kind.INVALID_HOST,
                "a sweep's runs go through a pool: name one (@POOL); a pool of one host is "
                '[pools.NAME] hosts = ["HOST"] in config.toml.',
            )
        result = await start(ops, p, ctx)
        if p.sync:
            syncs.watch(result.run, p.sync, p.sync_to)
        monitor.poke()
        return result

    def pool_run(host: str, run_id: str) -> m.RunInfo:
        name = pool_name(host)
        assert name is not None
        pools.hosts_of(name)
        found = pools.find(host, validation.run_id(run_id))
        if found is None:
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {run_id} in the pool {name}.")
        return found

    async def do_status(p: m.RunRef, ctx: RequestContext) -> m.StatusResult:
        if pool_name(p.host) is not None:
            found = pool_run(p.host, p.run_id)
            if pool_name(found.host) is not None:
                return m.StatusResult(run=found)  # queued, or never placed
            p = msgspec.structs.replace(p, host=found.host)
        result = await status(ops, p)
        return m.StatusResult(run=ops.annotate(result.run))

    async def do_tail(p: m.TailParams, ctx: RequestContext) -> m.TailResult:
        return await tail(ops, p, ctx)

    async def do_wait(p: m.WaitParams, ctx: RequestContext) -> m.WaitResult:
        return await waits.wait(p)

    async def do_forward(p: m.ForwardParams, ctx: RequestContext) -> m.ForwardInfo:
        return await forwards.open(p)

    async def do_reverse(p: m.ReverseForwardParams, ctx: RequestContext) -> m.ForwardInfo:
        return await reverse_forwards.open(p)

    async def do_tensorboard(p: m.TensorBoardParams, ctx: RequestContext) -> m.TensorBoardInfo:
        return await tensorboards.open(p)

    async def do_tensorboard_stop(
        p: m.TensorBoardStopParams, ctx: RequestContext
    ) -> m.TensorBoardStopResult:
        return await tensorboards.stop(p)

    async def do_kernel(p: m.KernelParams, ctx: RequestContext) -> m.KernelInfo:
        result = await open_kernel(ops, forwards, p, ctx)
        monitor.poke()
        return result

    async def do_forwards(p: m.ForwardsListParams, ctx: RequestContext) -> m.ForwardsListResult:
        return m.ForwardsListResult(forwards=all_forwards(p.host))

    async def do_unforward(p: m.ForwardCloseParams, ctx: RequestContext) -> m.ForwardCloseResult:
        closed = await asyncio.gather(forwards.close(p), reverse_forwards.close(p))
        return m.ForwardCloseResult(closed=[*closed[0], *closed[1]])

    async def do_fetch(p: m.FetchParams, ctx: RequestContext) -> m.FetchResult:
        return await fetch(ops, p, ctx)

    async def do_stop(p: m.StopParams, ctx: RequestContext) -> m.StopResult:
        if pool_name(p.host) is not None:
            found = pool_run(p.host, p.run_id)
            if found.state == "queued" and pool_name(found.host) is not None:
                return m.StopResult(outcome="stopped", killed=[], run=pools.stop_queued(found))
            if pool_name(found.host) is not None:
                return m.StopResult(outcome="not_running", killed=[], run=found)
            p = msgspec.structs.replace(p, host=found.host)
        return await stop(ops, p)

    async def do_restart(p: m.RestartParams, ctx: RequestContext) -> m.RestartResult:
        result = await restart(ops, p)
        monitor.poke()
        return result

    async def do_remove(p: m.RemoveParams, ctx: RequestContext) -> m.RemoveResult:
        if pool_name(p.host) is None:
            return await remove(ops, p)
        found = [pool_run(p.host, run_id) for run_id in p.run_ids]
        for run in found:
            if run.state == "queued" and pool_name(run.host) is not None:
                raise app_error(
                    Kind.RUN_ACTIVE,
                    f"{run.run_id} is queued in {p.host}; stop it first "
                    f"(rtrain stop {p.host} {run.run_id}).",
                )
        removed = []
        for run in found:
            if pool_name(run.host) is not None:  # never placed: only the registry's row
                service.registry.delete(run.host, run.run_id)
                ops.publish_removed(run)
                removed.append(m.RemovedRun(run_id=run.run_id, remote_dir="", had_dir=False))
            else:
                on_host = m.RemoveParams(host=run.host, run_ids=[run.run_id], workdir=p.workdir)
                removed += (await remove(ops, on_host)).removed
        return m.RemoveResult(removed=removed)

    async def do_pools(p: m.Empty, ctx: RequestContext) -> m.PoolsListResult:
        return m.PoolsListResult(pools=await pools.listed())

    async def do_exec(p: m.ExecParams, ctx: RequestContext) -> m.ExecResult:
        return await run_exec(ops, p)

    async def do_shell(p: m.RunRef, ctx: RequestContext) -> m.ShellResult:
        return await run_shell(ops, p)

    async def do_metrics(p: m.MetricsParams, ctx: RequestContext) -> m.MetricsResult:
        return await metrics(ops, p, ctx)

    async def do_gc(p: m.GcParams, ctx: RequestContext) -> m.GcResult:
        return await gc(ops, p)

    async def do_envs(p: m.EnvsParams, ctx: RequestContext) -> m.EnvsResult:
        return await envs(ops, p)

    async def do_guard(p: m.GuardParams, ctx: RequestContext) -> m.GuardResult:
        return await guard(ops, p)

    async def do_terminate(p: m.TerminateParams, ctx: RequestContext) -> m.TerminateResult:
        return await terminate_host(ops, p.host, force=p.force, workdir=p.workdir)

    async def do_hosts(p: m.Empty, ctx: RequestContext) -> m.HostsListResult:
        infos = []
        listed = hosts.host_infos()
        logins = await hosts.logins([info.alias for info in listed])
        guards = await asyncio.gather(*(_guard_now(ops, info) for info in listed))
        for info, state in zip(listed, guards, strict=True):
            sample = ops.metrics.latest_gpus(info.alias)
            if sample is not None:
                info = msgspec.structs.replace(info, gpus=sample.gpus, gpus_at=sample.time)
            if state is not None:
                info = msgspec.structs.replace(info, guard=state)
            if info.alias in logins:
                info = msgspec.structs.replace(info, login_since=logins[info.alias])
            up, idle, _ = service.registry.host_uptime(info.alias)
            infos.append(priced_host(info, ops.price(info.alias), up, idle))
        return m.HostsListResult(hosts=infos)

    async def do_login(p: m.LoginParams, ctx: RequestContext) -> m.LoginResult:
        return await hosts.login(p.host)

    async def do_logout(p: m.LoginParams, ctx: RequestContext) -> m.LogoutResult:
        return m.LogoutResult(ended=await hosts.logout(p.host))

    async def do_forget(p: m.ForgetHostParams, ctx: RequestContext) -> m.ForgetHostResult:
        return m.ForgetHostResult(forgotten=await hosts.forget(p.alias))

    async def do_price(p: m.HostPriceParams, ctx: RequestContext) -> m.HostPriceResult:
        validation.host(p.alias)
        service.registry.set_host_price(p.alias, p.price_per_hour)
        monitor.poke()  # a host with a price is watched idle too: from now on
        return m.HostPriceResult(alias=p.alias, price_per_hour=ops.price(p.alias))

    service.handlers = method_table(
        service,
        {
            "host/preflight": do_preflight,
            "run/start": do_start,
            "run/status": do_status,
            "run/wait": do_wait,
            "forwards/open": do_forward,
            "forwards/reverse": do_reverse,
            "tensorboard/open": do_tensorboard,
            "tensorboard/stop": do_tensorboard_stop,
            "kernel/open": do_kernel,
            "forwards/list": do_forwards,
            "forwards/close": do_unforward,
            "run/tail": do_tail,
            "run/metrics": do_metrics,
            "run/fetch": do_fetch,
            "run/stop": do_stop,
            "run/restart": do_restart,
            "run/remove": do_remove,
            "run/exec": do_exec,
            "run/shell": do_shell,
            "hosts/list": do_hosts,
            "pools/list": do_pools,
            "hosts/forget": do_forget,
            "host/login": do_login,
            "host/logout": do_logout,
            "hosts/price": do_price,
            "host/gc": do_gc,
            "host/envs": do_envs,
            "host/guard": do_guard,
            "host/terminate": do_terminate,
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


# hosts/list reads a guard again for at most this long; past it, the last state read stands.
GUARD_LOOK_S = 3.0


async def _guard_now(ops: Ops, info: m.HostInfo) -> m.GuardState | None:
    """The host's guard for hosts/list: read again when the host is connected and its guard
    is armed or configured (one round trip, beside the other hosts'), else as last read."""
    last = ops.guards.last(info.alias)
    settings = ops.hosts.config.host(info.alias)
    configured = settings.idle_stop is not None and settings.terminate is not None
    if info.connection != "connected" or not (configured or (last is not None and last[1].armed)):
        return last[1] if last is not None else None
    workdir = last[0] if last is not None else ops.host_workdir(info.alias, None)
    try:
        transport = await ops.transport(info.alias)
        shown = await asyncio.wait_for(guard_scripts.guard_show(transport, workdir), GUARD_LOOK_S)
    except (RpcError, TimeoutError) as error:
        log.info("%s: the guard was not read again: %s", info.alias, error)
        return last[1] if last is not None else None
    if not shown.ok:
        return last[1] if last is not None else None
    state = guard_state(shown, time.time())
    ops.guards.remember(info.alias, workdir, state)
    return state


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
