"""The daemon's request handlers, in three groups that each hold what their methods need:
the operations on runs, the port forwards, and the hosts. Each handler takes its method's
params Struct and returns its result (tests/daemon/test_handler_types.py)."""

from __future__ import annotations

import asyncio
import logging
import time

import msgspec

from rtrain.daemon.guard_book import guard_state
from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.envs import envs
from rtrain.daemon.operations.fetch import fetch
from rtrain.daemon.operations.gc import gc
from rtrain.daemon.operations.guard import guard
from rtrain.daemon.operations.metrics import metrics
from rtrain.daemon.operations.preflight import preflight
from rtrain.daemon.operations.remove import remove
from rtrain.daemon.operations.run_exec import run_exec
from rtrain.daemon.operations.run_shell import run_shell
from rtrain.daemon.operations.status import status
from rtrain.daemon.operations.stop import stop
from rtrain.daemon.operations.tail import tail
from rtrain.daemon.operations.terminate import terminate_host
from rtrain.daemon.pools.dispatcher import PoolDispatcher, pool_name
from rtrain.daemon.remote.contract import guard_scripts
from rtrain.daemon.trackers.kernel import open_kernel
from rtrain.daemon.trackers.sync import refuse_missing_packages, with_run_env
from rtrain.daemon.trackers.tensorboard import TensorBoards
from rtrain.protocol import messages as m
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error

from .client_session import Handler, RequestContext
from .costs import priced_host
from .forwards import Forwards
from .monitor import Monitor
from .reverse_forwards import ReverseForwards
from .run_companions import RunCompanions
from .run_waits import RunWaits
from .service import Service

log = logging.getLogger(__name__)


class RunHandlers:
    """run/*: one run's operations; the monitor looks at once after a start or a restart. A
    run of a pool (`@POOL`) is the pool dispatcher's while it is queued there, its host's
    once placed."""

    def __init__(
        self,
        ops: DaemonState,
        monitor: Monitor,
        waits: RunWaits,
        pools: PoolDispatcher,
        companions: RunCompanions,
    ) -> None:
        self.ops = ops
        self.monitor = monitor
        self.waits = waits
        self.pools = pools
        self.companions = companions

    def table(self) -> dict[str, Handler]:
        return {
            "run/start": self.start,
            "run/status": self.status,
            "run/wait": self.wait,
            "run/tail": self.tail,
            "run/metrics": self.metrics,
            "run/fetch": self.fetch,
            "run/stop": self.stop,
            "run/restart": self.restart,
            "run/remove": self.remove,
            "run/exec": self.exec,
            "run/shell": self.shell,
        }

    async def start(self, p: m.StartParams, ctx: RequestContext) -> m.StartResult:
        if p.sync:
            refuse_missing_packages(p.sync)
            p = with_run_env(p)
        if pool_name(p.host) is not None:
            return await self.pools.start(p, ctx)
        if p.sweep is not None:
            raise app_error(
                Kind.INVALID_HOST,
                "a sweep's runs go through a pool: name one (@POOL); a pool of one host is "
                '[pools.NAME] hosts = ["HOST"] in config.toml.',
            )
        result = await self.companions.start(self.ops, p, ctx)
        self.monitor.poke()
        return result

    def _pool_run(self, host: str, run_id: str) -> m.RunInfo:
        name = pool_name(host)
        assert name is not None
        self.pools.hosts_of(name)
        found = self.pools.find(host, validation.run_id(run_id))
        if found is None:
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {run_id} in the pool {name}.")
        return found

    async def status(self, p: m.RunRef, ctx: RequestContext) -> m.StatusResult:
        if pool_name(p.host) is not None:
            found = self._pool_run(p.host, p.run_id)
            if pool_name(found.host) is not None:
                return m.StatusResult(run=found)  # queued, or never placed
            p = msgspec.structs.replace(p, host=found.host)
        result = await status(self.ops, p)
        return m.StatusResult(run=self.ops.annotate(result.run))

    async def wait(self, p: m.WaitParams, ctx: RequestContext) -> m.WaitResult:
        return await self.waits.wait(p)

    async def tail(self, p: m.TailParams, ctx: RequestContext) -> m.TailResult:
        return await tail(self.ops, p, ctx)

    async def metrics(self, p: m.MetricsParams, ctx: RequestContext) -> m.MetricsResult:
        return await metrics(self.ops, p, ctx)

    async def fetch(self, p: m.FetchParams, ctx: RequestContext) -> m.FetchResult:
        return await fetch(self.ops, p, ctx)

    async def stop(self, p: m.StopParams, ctx: RequestContext) -> m.StopResult:
        if pool_name(p.host) is not None:
            found = self._pool_run(p.host, p.run_id)
            if found.state == "queued" and pool_name(found.host) is not None:
                return m.StopResult(outcome="stopped", killed=[], run=self.pools.stop_queued(found))
            if pool_name(found.host) is not None:
                return m.StopResult(outcome="not_running", killed=[], run=found)
            p = msgspec.structs.replace(p, host=found.host)
        return await stop(self.ops, p)

    async def restart(self, p: m.RestartParams, ctx: RequestContext) -> m.RestartResult:
        result = await self.companions.restart(self.ops, p)
        self.monitor.poke()
        return result

    async def remove(self, p: m.RemoveParams, ctx: RequestContext) -> m.RemoveResult:
        if pool_name(p.host) is None:
            return await remove(self.ops, p)
        found = [self._pool_run(p.host, run_id) for run_id in p.run_ids]
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
                self.ops.registry.delete(run.host, run.run_id)
                self.ops.publish_removed(run)
                removed.append(m.RemovedRun(run_id=run.run_id, remote_dir="", had_dir=False))
            else:
                on_host = m.RemoveParams(host=run.host, run_ids=[run.run_id], workdir=p.workdir)
                removed += (await remove(self.ops, on_host)).removed
        return m.RemoveResult(removed=removed)

    async def exec(self, p: m.ExecParams, ctx: RequestContext) -> m.ExecResult:
        return await run_exec(self.ops, p)

    async def shell(self, p: m.RunRef, ctx: RequestContext) -> m.ShellResult:
        return await run_shell(self.ops, p)


class ForwardHandlers:
    """forwards/*, tensorboard/* and kernel/open: ports of the hosts opened on this machine
    (and this machine's on the hosts), and what is served through them."""

    def __init__(
        self,
        ops: DaemonState,
        monitor: Monitor,
        forwards: Forwards,
        reverse_forwards: ReverseForwards,
        tensorboards: TensorBoards,
    ) -> None:
        self.ops = ops
        self.monitor = monitor
        self.forwards = forwards
        self.reverse_forwards = reverse_forwards
        self.tensorboards = tensorboards

    def table(self) -> dict[str, Handler]:
        return {
            "forwards/open": self.open,
            "forwards/reverse": self.reverse,
            "tensorboard/open": self.tensorboard,
            "tensorboard/stop": self.tensorboard_stop,
            "kernel/open": self.kernel,
            "forwards/list": self.listed,
            "forwards/close": self.close,
        }

    def all_forwards(self, host: str | None = None) -> list[m.ForwardInfo]:
        return [*self.forwards.listed(host), *self.reverse_forwards.listed(host)]

    async def open(self, p: m.ForwardParams, ctx: RequestContext) -> m.ForwardInfo:
        return await self.forwards.open(p)

    async def reverse(self, p: m.ReverseForwardParams, ctx: RequestContext) -> m.ForwardInfo:
        return await self.reverse_forwards.open(p)

    async def tensorboard(self, p: m.TensorBoardParams, ctx: RequestContext) -> m.TensorBoardInfo:
        return await self.tensorboards.open(p)

    async def tensorboard_stop(
        self, p: m.TensorBoardStopParams, ctx: RequestContext
    ) -> m.TensorBoardStopResult:
        return await self.tensorboards.stop(p)

    async def kernel(self, p: m.KernelParams, ctx: RequestContext) -> m.KernelInfo:
        result = await open_kernel(self.ops, self.forwards, p, ctx)
        self.monitor.poke()
        return result

    async def listed(self, p: m.ForwardsListParams, ctx: RequestContext) -> m.ForwardsListResult:
        return m.ForwardsListResult(forwards=self.all_forwards(p.host))

    async def close(self, p: m.ForwardCloseParams, ctx: RequestContext) -> m.ForwardCloseResult:
        closed = await asyncio.gather(self.forwards.close(p), self.reverse_forwards.close(p))
        return m.ForwardCloseResult(closed=[*closed[0], *closed[1]])


class HostHandlers:
    """host/* and hosts/*: what a host is, costs, guards and allows."""

    def __init__(
        self, service: Service, ops: DaemonState, monitor: Monitor, pools: PoolDispatcher
    ) -> None:
        self.service = service
        self.ops = ops
        self.monitor = monitor
        self.pools = pools

    def table(self) -> dict[str, Handler]:
        return {
            "host/preflight": self.preflight,
            "hosts/list": self.hosts_list,
            "pools/list": self.pools_list,
            "hosts/forget": self.forget,
            "host/login": self.login,
            "host/logout": self.logout,
            "hosts/price": self.price,
            "host/gc": self.gc,
            "host/envs": self.envs,
            "host/guard": self.guard,
            "host/terminate": self.terminate,
        }

    async def preflight(self, p: m.PreflightParams, ctx: RequestContext) -> m.PreflightResult:
        return await preflight(self.ops, p, ctx)

    async def hosts_list(self, p: m.Empty, ctx: RequestContext) -> m.HostsListResult:
        infos = []
        hosts = self.ops.hosts
        listed = hosts.host_infos()
        logins = await hosts.logins([info.alias for info in listed])
        guards = await asyncio.gather(*(_guard_now(self.ops, info) for info in listed))
        for info, state in zip(listed, guards, strict=True):
            sample = self.ops.metrics.latest_gpus(info.alias)
            if sample is not None:
                info = msgspec.structs.replace(info, gpus=sample.gpus, gpus_at=sample.time)
            if state is not None:
                info = msgspec.structs.replace(info, guard=state)
            if info.alias in logins:
                info = msgspec.structs.replace(info, login_since=logins[info.alias])
            up, idle, _ = self.service.registry.host_uptime(info.alias)
            infos.append(priced_host(info, self.ops.price(info.alias), up, idle))
        return m.HostsListResult(hosts=infos)

    async def pools_list(self, p: m.Empty, ctx: RequestContext) -> m.PoolsListResult:
        return m.PoolsListResult(pools=await self.pools.listed())

    async def forget(self, p: m.ForgetHostParams, ctx: RequestContext) -> m.ForgetHostResult:
        return m.ForgetHostResult(forgotten=await self.ops.hosts.forget(p.alias))

    async def login(self, p: m.LoginParams, ctx: RequestContext) -> m.LoginResult:
        return await self.ops.hosts.login(p.host)

    async def logout(self, p: m.LoginParams, ctx: RequestContext) -> m.LogoutResult:
        return m.LogoutResult(ended=await self.ops.hosts.logout(p.host))

    async def price(self, p: m.HostPriceParams, ctx: RequestContext) -> m.HostPriceResult:
        validation.host(p.alias)
        self.service.registry.set_host_price(p.alias, p.price_per_hour)
        self.monitor.poke()  # a host with a price is watched idle too: from now on
        return m.HostPriceResult(alias=p.alias, price_per_hour=self.ops.price(p.alias))

    async def gc(self, p: m.GcParams, ctx: RequestContext) -> m.GcResult:
        return await gc(self.ops, p)

    async def envs(self, p: m.EnvsParams, ctx: RequestContext) -> m.EnvsResult:
        return await envs(self.ops, p)

    async def guard(self, p: m.GuardParams, ctx: RequestContext) -> m.GuardResult:
        return await guard(self.ops, p)

    async def terminate(self, p: m.TerminateParams, ctx: RequestContext) -> m.TerminateResult:
        return await terminate_host(self.ops, p.host, force=p.force, workdir=p.workdir)


# hosts/list reads a guard again for at most this long; past it, the last state read stands.
GUARD_LOOK_S = 3.0


async def _guard_now(ops: DaemonState, info: m.HostInfo) -> m.GuardState | None:
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
