"""Transfer leases: while the daemon moves files to or from a host, a lease on the host says
so, and the host's guard counts the host as busy (docs/guard.md).

The lease is a file in `<workdir>/.leases/` holding its expiry by the host's own clock
(lease.sh), so no clock of this machine is compared with the host's. It is renewed every
RENEW_EVERY seconds and expires LEASE_SECONDS after the last renewal: a daemon killed in the
middle of a transfer blocks the guard for a minute, not forever.

Round trips: the first take goes out beside the transfer's own first script (it does not
hold the transfer up), a renewal every 20 s, and the drop after the transfer, in the
background (`settled` waits for it, for a caller that must see the host's leases as they
are now, such as terminate).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

from rtrain.daemon.remote.contract import guard_scripts
from rtrain.daemon.transports.transport import Transport

log = logging.getLogger(__name__)

LEASE_SECONDS = 60
RENEW_EVERY = 20.0


class TransferLeases:
    """The leases this daemon holds, by host; each kept by a task of its own."""

    def __init__(self) -> None:
        # host -> each keeper's task and the event that tells it its transfer is over
        self._keepers: dict[str, dict[asyncio.Task[None], asyncio.Event]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, host: str, transport: Transport, workdir: str) -> AsyncIterator[None]:
        """A lease on `host`'s `workdir` for as long as the block runs. Never fails the
        transfer: a lease that cannot be taken is logged (the transfer will say why the host
        is away on its own)."""
        token = secrets.token_hex(8)
        done = asyncio.Event()
        keeper = asyncio.create_task(_keep(transport, workdir, token, done))
        keepers = self._keepers.setdefault(host, {})
        keepers[keeper] = done
        keeper.add_done_callback(lambda task: keepers.pop(task, None))
        try:
            yield
        finally:
            done.set()

    async def settled(self, host: str) -> None:
        """Wait until every lease this daemon let go of on `host` is gone from it (those of
        transfers still in flight are not waited for)."""
        dropping = [task for task, over in self._keepers.get(host, {}).items() if over.is_set()]
        if dropping:
            await asyncio.gather(*dropping, return_exceptions=True)

    def holding(self, host: str) -> bool:
        """Whether a transfer of this daemon to or from `host` is in flight."""
        return any(not over.is_set() for over in self._keepers.get(host, {}).values())


async def _keep(transport: Transport, workdir: str, token: str, done: asyncio.Event) -> None:
    """Take the lease, renew it until `done`, then drop it. A script in flight is let
    finish rather than cancelled (a cancelled script costs its long-lived shell). A keeper
    cancelled (the daemon stopping) leaves its lease to expire."""
    taken = False
    while not done.is_set():
        await _ask(transport, workdir, token, LEASE_SECONDS)
        taken = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), RENEW_EVERY)
    if taken:
        await _ask(transport, workdir, token, 0)


async def _ask(transport: Transport, workdir: str, token: str, seconds: int) -> None:
    try:
        answer = await guard_scripts.lease(transport, workdir, token, seconds)
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.info(
            "%s: the transfer lease %s was not %s: %s",
            transport.alias,
            token,
            "renewed" if seconds else "dropped",
            error,
        )
        return
    if not answer.ok:
        log.info("%s: the transfer lease %s: %s", transport.alias, token, answer.error_text)
