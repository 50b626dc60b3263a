"""The Unix socket: bound 0600 in a private directory, peers checked with SO_PEERCRED."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from collections.abc import Callable
from pathlib import Path

from .client_session import ClientSession, Handler

log = logging.getLogger(__name__)
_UCRED = struct.Struct("3i")  # pid, uid, gid


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


class SocketServer:
    def __init__(self, path: Path, dispatch: Callable[[str], Handler | None]) -> None:
        self.path = path
        self.sessions: set[ClientSession] = set()
        self._dispatch = dispatch
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        # The caller holds the instance lock, so a socket file here is a dead daemon's.
        if self.path.is_socket():
            self.path.unlink()
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._accept, path=str(self.path), limit=1024 * 1024
            )
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        pid, uid, _ = peer_credentials(sock)
        if uid != os.getuid():
            log.warning("refused a connection from uid %s (pid %s)", uid, pid)
            writer.close()
            return
        session = ClientSession(reader, writer, self._dispatch, peer_pid=pid)
        self.sessions.add(session)
        session.on_close.append(self.sessions.discard)
        await session.serve()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for session in list(self.sessions):
            session.close()
        if self.path.is_socket():
            self.path.unlink()
