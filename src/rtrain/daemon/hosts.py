"""Every host the daemon talks to, each with the transport it needs (found out, then remembered)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from rtrain.daemon.ssh.cipher_order import master_cipher_options
from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.ssh.control_master import ControlMaster
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.ssh.login import end_login, login_argv
from rtrain.daemon.ssh.options import ssh_config_file
from rtrain.daemon.transports.local_transport import LOCAL_ALIAS, LocalTransport
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import HostInfo, LoginResult, PartitionInfo

from .registry import Registry
from .user_config import UserConfig

log = logging.getLogger(__name__)
EXEC_PROBE = "echo rtrain-exec-ok"
# An alias that never connected (a typo, a host tried once) leaves `hosts` this long after
# its last try, so the list and shell completion do not keep every mistake.
FORGET_UNCONNECTED_AFTER = 3600.0
# A host that wants a login is tried again (in BatchMode) at most this often.
LOGIN_RETRY_S = 60.0


class HostPool:
    def __init__(self, runtime_dir: Path, registry: Registry, config: UserConfig) -> None:
        self.runtime_dir = runtime_dir
        self.registry = registry
        self.config = config
        # Slurm hosts: their partitions as the last preflight saw them, for `hosts`.
        self.partitions: dict[str, list[PartitionInfo]] = {}
        self._transports: dict[str, Transport] = {LOCAL_ALIAS: LocalTransport()}
        self._locks: dict[str, asyncio.Lock] = {}
        # Hosts that last answered login_required: when, and the error.
        self._login_needed: dict[str, tuple[float, RpcError]] = {}

    async def get(self, alias: str) -> Transport:
        """The connected transport for `alias`, detecting exec vs console the first time."""
        validation.host(alias)
        await self._refuse_until_logged_in(alias)
        try:
            return await self._get(alias)
        except RpcError as error:
            if error.kind == Kind.LOGIN_REQUIRED:
                self._login_needed[alias] = (time.monotonic(), error)
            raise

    async def _refuse_until_logged_in(self, alias: str) -> None:
        """A host that just said it wants a login gets no new BatchMode attempt for a while:
        the monitor would knock every few seconds, and a site's fail2ban counts each one as
        a failed login. A login that appears meanwhile is used at once."""
        last = self._login_needed.get(alias)
        if last is None:
            return
        at, error = last
        if time.monotonic() - at >= LOGIN_RETRY_S or await self.master(alias).use_login():
            del self._login_needed[alias]
            return
        raise error

    async def _get(self, alias: str) -> Transport:
        transport = self._transports.get(alias)
        if transport is not None:
            await transport.connect()
            return transport
        lock = self._locks.setdefault(alias, asyncio.Lock())
        async with lock:
            if alias not in self._transports:
                self._transports[alias] = await self._open(alias)
        return self._transports[alias]

    async def _open(self, alias: str) -> Transport:
        ssh_config = ssh_config_file(self.config.ssh_config)
        known = self.config.host(alias).transport or self.registry.host_transport(alias)
        if known == "console":
            return await self._console(alias, ssh_config)
        transport = ExecTransport(alias, self.runtime_dir, ssh_config)
        await self._connect(alias, transport)
        if known == "exec" or await self._exec_works(transport):
            self.registry.set_host(alias, "exec", None)
            return transport
        log.info("%s refuses exec channels; using the console transport", alias)
        await transport.close()
        return await self._console(alias, ssh_config)

    async def _connect(self, alias: str, transport: Transport) -> None:
        """Connect, or record why not (for `hosts/list`) and let nothing linger."""
        try:
            await transport.connect()
        except Exception as error:
            self.registry.set_host(alias, None, getattr(error, "message", str(error)))
            await transport.close()
            raise

    @staticmethod
    async def _exec_works(transport: ExecTransport) -> bool:
        proc = await asyncio.create_subprocess_exec(
            *transport.master.command_argv(EXEC_PROBE),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return False
        return b"rtrain-exec-ok" in out

    async def _console(self, alias: str, ssh_config: Path | None) -> Transport:
        transport = ConsoleTransport(alias, self.runtime_dir, ssh_config)
        await self._connect(alias, transport)
        self.registry.set_host(alias, "console", None)
        return transport

    def master(self, alias: str) -> ControlMaster:
        """The host's ControlMaster: its transport's, or a new one that starts nothing."""
        master = getattr(self._transports.get(alias), "master", None)
        if isinstance(master, ControlMaster):
            return master
        return ControlMaster(alias, self.runtime_dir, ssh_config_file(self.config.ssh_config))

    async def login(self, alias: str) -> LoginResult:
        """How to log in to `alias` on a terminal; nothing to run where a login is live or
        the daemon gets in without one (it then connects: hosts/list shows the login)."""
        validation.host(alias)
        if alias == LOCAL_ALIAS:
            raise app_error(Kind.INVALID_HOST, "local is this machine; it needs no login.")
        self._login_needed.pop(alias, None)  # asked by a person: try the host itself
        try:
            await self.get(alias)
        except RpcError as error:
            # Only a login can help where ssh wanted an answer (a password, a code, a new
            # host key to accept); an unreachable host stays unreachable.
            if error.kind not in (Kind.LOGIN_REQUIRED, Kind.AUTH_FAILED, Kind.HOST_KEY_CHANGED):
                raise
            master = self.master(alias)
            await master.use_login()  # clears a dead login's socket for the new one
            ciphers = await master_cipher_options(alias, master.config)
            return LoginResult(argv=login_argv(master, ciphers))
        master = self.master(alias)
        if master.login_since is not None:
            return LoginResult(since=master.login_since)
        return LoginResult(needed=False)

    async def logout(self, alias: str) -> bool:
        validation.host(alias)
        return await end_login(self.master(alias))

    async def logins(self, aliases: list[str]) -> dict[str, float]:
        """Which of `aliases` hold a live login, and since when."""

        async def since(alias: str) -> float | None:
            if alias == LOCAL_ALIAS:
                return None
            master = self.master(alias)
            return master.login_since if await master.use_login() else None

        found = await asyncio.gather(*(since(alias) for alias in aliases))
        return {alias: at for alias, at in zip(aliases, found, strict=True) if at is not None}

    def connected(self, alias: str) -> bool:
        """Whether a connection to `alias` is open and up now."""
        transport = self._transports.get(alias)
        return transport is not None and transport.state == "connected"

    def host_infos(self) -> list[HostInfo]:
        self.registry.forget_unconnected(time.time() - FORGET_UNCONNECTED_AFTER)
        runs = self.registry.list()
        aliases = sorted({LOCAL_ALIAS, *self.registry.hosts(), *self._transports})
        infos = []
        for alias in aliases:
            transport = self._transports.get(alias)
            mine = [r for r in runs if r.host == alias]
            # A host whose first connection failed has no transport; the registry keeps why.
            error = transport.last_error if transport else self.registry.host_error(alias)
            if transport:
                state = transport.state
            else:
                state = "failed" if error else "disconnected"
            infos.append(
                HostInfo(
                    alias=alias,
                    connection=state,
                    transport=(
                        transport.kind if transport else self.registry.host_transport(alias)
                    ),
                    runs=len(mine),
                    running=sum(r.state == "running" for r in mine),
                    last_error=error,
                    scheduler=_scheduler(self.config.host(alias).scheduler),
                    partitions=self.partitions.get(alias, []),
                )
            )
        return infos

    async def forget(self, alias: str) -> bool:
        """Forget `alias`'s connection: its record and any transport open to it."""
        validation.host(alias)
        if alias == LOCAL_ALIAS:
            raise app_error(Kind.INVALID_HOST, "local is built in; there is nothing to forget.")
        known = self.registry.list(host=alias)
        if known:
            raise app_error(
                Kind.INVALID_HOST,
                f"{alias} has {len(known)} run(s) rtrain knows of, and stays listed while it "
                "does; forgetting a host forgets only hosts without runs.",
            )
        had_transport = alias in self._transports
        await self.drop(alias)
        return self.registry.forget_host(alias) or had_transport

    async def drop(self, alias: str) -> None:
        transport = self._transports.pop(alias, None)
        if transport is not None and alias != LOCAL_ALIAS:
            await transport.close()

    async def close(self) -> None:
        for alias in list(self._transports):
            await self.drop(alias)


def _scheduler(name: str | None) -> str | None:
    return None if name in (None, "none") else name
