"""Runs started in a pool: placed on a host that can give them their GPUs now, else queued
in the registry, and placed as GPUs free (the monitor calls `drain` after each poll).

One lock per pool orders this daemon's placements (first come, first served, by priority);
between daemons, or against a start on a host by hand, the far side's reservation decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

from rtrain.daemon.operations.context import DaemonState, chosen, now
from rtrain.daemon.operations.notifier import Notifier
from rtrain.daemon.operations.start import RESERVED, new_run_id
from rtrain.daemon.operations.start_plan import plan_start
from rtrain.daemon.remote.contract import launch_scripts
from rtrain.daemon.remote.contract.answers import Exit
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    DEFAULT_WORKDIR,
    PoolInfo,
    QueuedRun,
    RunInfo,
    StartParams,
    StartResult,
)
from rtrain.protocol.run_states import is_live

from .placement import (
    HostLook,
    input_keys,
    look_hosts,
    never_fits,
    none_can_run,
    placed_words,
    ranked,
    waiting_words,
    with_fit,
)
from .pool_rules import check_poolable
from .run_fit import Refusals, RunFit, run_fit

log = logging.getLogger(__name__)

StartRun = Callable[[DaemonState, StartParams, Notifier], Awaitable[StartResult]]


class _Quiet:
    """The notifier of a start the daemon makes by itself: no client listens."""

    def notify(self, method: str, params: object) -> None:
        return None


def _marks(name: str, p: StartParams) -> dict[str, Any]:
    """What a run of the pool records besides its start: its pool, its sweep and params."""
    marks: dict[str, Any] = {"pool": f"@{name}"}
    if p.sweep is not None:
        marks |= {"sweep": p.sweep.name, "params": dict(p.sweep.params)}
    return marks


def _queued_row(run: RunInfo, params: bytes) -> QueuedRun:
    p = msgspec.json.decode(params, type=StartParams)
    return QueuedRun(
        run_id=run.run_id,
        reason=run.reason,
        priority=p.priority,
        sweep=p.sweep.name if p.sweep is not None else None,
        created_at=run.created_at,
    )


def pool_name(host: str) -> str | None:
    """`lab` for `@lab`; None for a host."""
    return host[1:] if host.startswith("@") else None


class PoolDispatcher:
    def __init__(self, ops: DaemonState, start_run: StartRun, poke: Callable[[], None]) -> None:
        self.ops = ops
        self._start_run = start_run
        self._poke = poke
        self._locks: dict[str, asyncio.Lock] = {}
        # A queued run's secrets live in this daemon's memory only, never in the registry.
        self._secrets: dict[str, dict[str, str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._draining: asyncio.Task[None] | None = None
        # Runs being started on a host now, by run id: their sweep (None: none).
        self._placing: dict[str, str | None] = {}
        self._refusals = Refusals()

    # ---- config ---------------------------------------------------------------------

    def hosts_of(self, name: str) -> list[str]:
        pools = self.ops.hosts.config.pools
        if name not in pools:
            known = ", ".join(sorted(pools)) or "none"
            raise app_error(
                Kind.INVALID_HOST,
                f"there is no pool {name!r} in config.toml (pools: {known}); add "
                f'[pools.{name}] hosts = ["HOST", ...] to it.',
            )
        return list(pools[name].hosts)

    def _workdirs(self, hosts: Sequence[str], p: StartParams) -> list[str]:
        config = self.ops.hosts.config
        return [
            validation.workdir(chosen(p.workdir, config.host(alias).workdir, DEFAULT_WORKDIR))
            for alias in hosts
        ]

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    # ---- run/start with host @NAME ----------------------------------------------------

    async def start(self, p: StartParams, ctx: Notifier) -> StartResult:
        name = pool_name(p.host)
        assert name is not None
        hosts = self.hosts_of(name)
        check_poolable(name, hosts, p, self.ops.hosts.config)
        run_id = validation.run_id(p.run_id) if p.run_id is not None else new_run_id()
        if p.sweep is not None:
            validation.run_id(p.sweep.name)  # a sweep is named as its runs are
        self._check_new(run_id)
        p = msgspec.structs.replace(p, run_id=run_id)
        # Everything a user can get wrong is judged before any ssh, as for a host.
        plan = await plan_start(
            self.ops, msgspec.structs.replace(p, host=hosts[0]), run_id, RESERVED
        )
        inputs = await asyncio.to_thread(input_keys, plan.inputs.files)
        fit = await asyncio.to_thread(run_fit, self.ops.hosts.config, hosts, p, plan, inputs)
        async with self._lock(name):
            ahead = [q for q in self._queue(name) if q.priority >= p.priority]
            looks = await look_hosts(
                self.ops, hosts, self._workdirs(hosts, p), p.share_gpus, run_id
            )
            full = self._sweep_full(p)
            place = None
            if not ahead and not full:
                looks = await with_fit(self.ops, looks, p.gpus, fit, self._refusals)
                place = await self._reserve_first(ranked(looks, p.gpus), p)
            if place is None and full and not ahead:
                return StartResult(run=self._enqueue(name, p, full))
            if place is None:
                if none_can_run(looks):
                    raise app_error(
                        Kind.HOST_NOT_READY,
                        f"no host of {name} can run {run_id} ("
                        + "; ".join(f"{x.alias}: {x.unfit}" for x in looks)
                        + "); nothing was started.",
                    )
                if never_fits(looks, p.gpus):
                    raise app_error(
                        Kind.HOST_NOT_READY,
                        f"{run_id} asks for {p.gpus} GPU(s), but no host of {name} has that "
                        f"many ({', '.join(f'{x.alias}: {x.total}' for x in looks)}); "
                        "nothing was started.",
                    )
                if ahead and ranked(looks, p.gpus):
                    # GPUs are free, but runs queued first go first (the next poll places it).
                    reason = f"waiting behind {len(ahead)} run(s) queued in {name}"
                else:
                    reason = waiting_words(name, looks, p.gpus)
                    if ahead:
                        reason += f"; {len(ahead)} run(s) ahead"
                return StartResult(run=self._enqueue(name, p, reason))
        return await self._start_on(name, place, p, ctx, looks)

    async def _fit_for(self, hosts: Sequence[str], p: StartParams) -> RunFit:
        """A queued run's questions to the hosts, from its start as kept (judged again: its
        local files may have changed since)."""
        assert p.run_id is not None
        first = msgspec.structs.replace(p, host=hosts[0])
        plan = await plan_start(self.ops, first, p.run_id, RESERVED)
        inputs = await asyncio.to_thread(input_keys, plan.inputs.files)
        return await asyncio.to_thread(run_fit, self.ops.hosts.config, hosts, p, plan, inputs)

    def _sweep_full(self, p: StartParams) -> str | None:
        """Why a run of a sweep must wait for one of the sweep's own runs to end (its
        `maxParallel` are placed), or None."""
        if p.sweep is None or p.sweep.max_parallel is None:
            return None
        name = p.sweep.name
        live = sum(
            1
            for run in self.ops.registry.list()
            if run.sweep == name and is_live(run.state) and run.run_id not in self._placing
        )
        live += sum(1 for sweep in self._placing.values() if sweep == name)
        if live < p.sweep.max_parallel:
            return None
        return (
            f"waiting for a run of sweep {name} to end ({live} of {p.sweep.max_parallel} at once)"
        )

    def _check_new(self, run_id: str) -> None:
        """A run id taken anywhere this daemon knows (a host, a queue) is never reused."""
        taken = self.ops.registry.queued_run(run_id) is not None or any(
            run.run_id == run_id for run in self.ops.registry.list()
        )
        if taken:
            raise app_error(
                Kind.RUN_EXISTS,
                f"run {run_id} already exists; pick another --run-id.",
                runId=run_id,
            )

    async def _reserve_first(self, candidates: list[HostLook], p: StartParams) -> HostLook | None:
        """The first candidate whose host grants the run its GPUs (the far claim decides)."""
        assert p.run_id is not None
        for look in candidates:
            if p.gpus == 0 or look.total == 0:
                return look  # nothing to claim
            try:
                transport = await self.ops.transport(look.alias)
                reserved = await launch_scripts.reserve_gpus(
                    transport, look.workdir, p.run_id, p.gpus, p.share_gpus
                )
            except RpcError as error:
                log.info("%s: no reservation for %s: %s", look.alias, p.run_id, error)
                continue
            if reserved.exit == Exit.OK:
                return look
            log.info("%s: %s lost the race for GPUs: %s", look.alias, p.run_id, reserved.error_text)
        return None

    async def _release(self, look: HostLook, run_id: str) -> None:
        with contextlib.suppress(RpcError):
            await launch_scripts.release_gpus(
                await self.ops.transport(look.alias), look.workdir, run_id
            )

    async def _start_on(
        self, name: str, look: HostLook, p: StartParams, ctx: Notifier, looks: list[HostLook]
    ) -> StartResult:
        assert p.run_id is not None
        placed = msgspec.structs.replace(
            p, host=look.alias, secrets=self._secrets.pop(p.run_id, p.secrets), sweep=None
        )
        self._placing[p.run_id] = p.sweep.name if p.sweep is not None else None
        try:
            result = await self._start_run(self.ops, placed, ctx)
        except BaseException:
            await asyncio.shield(self._release(look, p.run_id))
            raise
        finally:
            self._placing.pop(p.run_id, None)
        placement = placed_words(look, p.gpus, looks)
        marks = {**_marks(name, p), "placement": placement}
        run = self.ops.known(look.alias, p.run_id) or result.run
        self.ops.record(msgspec.structs.replace(run, **marks))
        self._poke()
        return msgspec.structs.replace(
            result, run=msgspec.structs.replace(result.run, **marks), placement=placement
        )

    # ---- the queue --------------------------------------------------------------------

    def _queue(self, name: str) -> list[StartParams]:
        return [
            msgspec.json.decode(params, type=StartParams)
            for _, params in self.ops.registry.queued(name)
        ]

    def _enqueue(self, name: str, p: StartParams, reason: str) -> RunInfo:
        assert p.run_id is not None
        run = RunInfo(
            host=f"@{name}",
            run_id=p.run_id,
            state="queued",
            workdir=p.workdir,
            command=p.command,
            created_at=now(),
            last_seen=now(),
            reason=reason,
            env=p.env,
            setup=p.setup,
            **_marks(name, p),
        )
        if p.secrets:
            self._secrets[p.run_id] = dict(p.secrets)
        # The names of its secrets are kept, their values never: a daemon that restarts
        # knows the run had some it can no longer give.
        kept = msgspec.structs.replace(p, secrets=dict.fromkeys(p.secrets, ""), progress_token=None)
        self.ops.registry.enqueue(name, p.priority, msgspec.json.encode(kept), run)
        self.ops.publish(run)
        return run

    def polled(self) -> None:
        """After each of the monitor's polls: place what the queues hold, in the background
        (a host that does not answer never holds up the monitor), one drain at a time."""
        if self._draining is not None and not self._draining.done():
            return
        if not self.ops.registry.queued():
            return
        self._draining = asyncio.create_task(self.drain())

    async def drain(self) -> None:
        """Place what the queues hold as far as hosts can take it now, in order: a run that
        cannot go yet keeps every run behind it in its pool waiting (no run is starved by
        smaller ones slipping past)."""
        for name in sorted({run.host[1:] for run, _ in self.ops.registry.queued()}):
            lock = self._lock(name)
            if lock.locked():
                continue  # a placement is under way there; the next poll comes back
            async with lock:
                try:
                    await self._drain_pool(name)
                except Exception:  # one pool's trouble never stops the others' placing
                    log.exception("placing the runs queued in %s", name)

    async def _drain_pool(self, name: str) -> None:
        try:
            hosts = self.hosts_of(name)
        except RpcError as error:
            for run, _ in self.ops.registry.queued(name):
                self._give_up(run, error.message)
            return
        looks_by: dict[tuple[str, ...], list[HostLook]] = {}
        blocked = False
        waiting = 0  # runs of the pool still queued ahead of the one at hand
        for queued, params in self.ops.registry.queued(name):
            p = msgspec.json.decode(params, type=StartParams)
            assert p.run_id is not None
            if any(not value for value in p.secrets.values()) and p.run_id not in self._secrets:
                self._give_up(
                    queued,
                    "its secrets were held in the daemon's memory only, and the daemon "
                    "restarted; start it again",
                )
                continue
            workdirs = tuple(self._workdirs(hosts, p))
            if workdirs not in looks_by:
                looks_by[workdirs] = await look_hosts(self.ops, hosts, workdirs, p.share_gpus, None)
            looks = looks_by[workdirs]
            full = self._sweep_full(p)
            if full is not None:  # it waits for its own sweep, which holds no one else up
                self._note_reason(queued, full)
                continue
            place = None
            fitted = looks
            if not blocked and ranked(looks, p.gpus):
                try:
                    fit = await self._fit_for(hosts, p)
                except RpcError as error:
                    self._give_up(queued, f"it cannot be started any more: {error.message}")
                    continue
                fitted = await with_fit(self.ops, looks, p.gpus, fit, self._refusals)
                place = await self._reserve_first(ranked(fitted, p.gpus), p)
            if place is None:
                blocked = True
                reason = waiting_words(name, fitted, p.gpus)
                if waiting:
                    reason += f"; {waiting} run(s) ahead"
                waiting += 1
                self._note_reason(queued, reason)
                continue
            looks_by[workdirs] = [
                look.taken(p.gpus) if look.alias == place.alias else look for look in looks
            ]
            self.ops.registry.dequeue(p.run_id)
            self.ops.publish_removed(queued)
            # Counted for its sweep from now, before its task starts.
            self._placing[p.run_id] = p.sweep.name if p.sweep is not None else None
            task = asyncio.create_task(self._place_queued(name, place, p, queued, fitted))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _note_reason(self, queued: RunInfo, reason: str) -> None:
        if reason != queued.reason:
            moved = msgspec.structs.replace(queued, reason=reason, last_seen=now())
            self.ops.registry.requeue(moved)
            self.ops.publish(moved)

    async def _place_queued(
        self, name: str, look: HostLook, p: StartParams, queued: RunInfo, looks: list[HostLook]
    ) -> None:
        try:
            await self._start_on(name, look, p, _Quiet(), looks)
        except RpcError as error:
            self._give_up(queued, f"placing it on {look.alias} failed: {error.message}")
        except Exception:
            log.exception("placing %s on %s", p.run_id, look.alias)
            self._give_up(queued, f"placing it on {look.alias} failed (see the daemon log)")

    def _give_up(self, queued: RunInfo, reason: str) -> None:
        """A queued run that can never be placed: recorded failed under its pool."""
        self.ops.registry.dequeue(queued.run_id)
        self._secrets.pop(queued.run_id, None)
        self.ops.record(
            msgspec.structs.replace(queued, state="failed", reason=reason, last_seen=now())
        )

    async def close(self) -> None:
        if self._draining is not None:
            self._tasks.add(self._draining)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- reading, stopping, removing ------------------------------------------------

    def find(self, pool_host: str, run_id: str) -> RunInfo | None:
        """A run of the pool: queued (host @NAME), ended there unplaced, or where it went."""
        queued = self.ops.registry.queued_run(run_id)
        if queued is not None and queued.host == pool_host:
            return queued
        own = self.ops.registry.get(pool_host, run_id)
        if own is not None:
            return own
        return next(
            (r for r in self.ops.registry.list() if r.run_id == run_id and r.pool == pool_host),
            None,
        )

    def stop_queued(self, run: RunInfo) -> RunInfo:
        """A queued run taken out of its queue: recorded stopped, nothing ever ran."""
        self.ops.registry.dequeue(run.run_id)
        self._secrets.pop(run.run_id, None)
        return self.ops.record(
            msgspec.structs.replace(
                run, state="stopped", reason="stopped while queued in its pool", last_seen=now()
            )
        )

    async def listed(self) -> list[PoolInfo]:
        pools = self.ops.hosts.config.pools
        blank = StartParams(host="-")
        looks = await asyncio.gather(
            *(
                look_hosts(
                    self.ops, pools[n].hosts, self._workdirs(pools[n].hosts, blank), False, None
                )
                for n in sorted(pools)
            )
        )
        return [
            PoolInfo(
                name=name,
                hosts=[look.shown for look in pool_looks],
                queue=[_queued_row(run, params) for run, params in self.ops.registry.queued(name)],
            )
            for name, pool_looks in zip(sorted(pools), looks, strict=True)
        ]
