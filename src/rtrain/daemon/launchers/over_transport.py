"""A launcher whose runs live on a host it reaches through a transport, by far-side scripts."""

from __future__ import annotations

from rtrain.daemon.transports.transport import Transport

from .launcher import Launcher
from .placement import Connect, Placement


class OverTransport(Launcher):
    def __init__(self, where: Placement) -> None:
        self.where = where

    @classmethod
    def placed(cls, where: Placement) -> Launcher:
        return cls(where)

    async def transport(self, host: str | None = None) -> Transport:
        """The transport to `host` (the run's own when None)."""
        return await self.connect(host or self.where.host)

    @property
    def connect(self) -> Connect:
        return self.where.connect
