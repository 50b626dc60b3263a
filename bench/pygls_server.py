"""The comparison server of the RPC benchmark: pygls answering `daemon/info` on a Unix socket.

pygls serves one client per server object (an LSP server has one editor), so each connection
gets its own LanguageServer, all in one process and one event loop, as the rtrain daemon
serves all of its clients. The answer carries the same fields as rtrain's DaemonInfo.

    python -m bench.pygls_server SOCKET_PATH     # prints "ready", serves until killed
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from typing import Any

from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer

log = logging.getLogger("pygls-bench")


def build_server(socket_path: str, started: float, clients: list[int]) -> LanguageServer:
    server = LanguageServer("pygls-bench", "1.0")

    @server.feature("daemon/info")
    def info(ls: LanguageServer, params: Any) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": "1.0",
            "protocolVersion": "1.0",
            "uptime": round(time.monotonic() - started, 3),
            "socketPath": socket_path,
            "stateDir": os.path.dirname(socket_path),
            "logPath": os.path.join(os.path.dirname(socket_path), "daemon.log"),
            "clients": clients[0],
        }

    return server


async def serve(socket_path: str) -> None:
    started = time.monotonic()
    clients = [0]

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        clients[0] += 1
        server = build_server(socket_path, started, clients)
        server.protocol.set_writer(writer)  # type: ignore[arg-type,unused-ignore]
        try:
            await run_async(
                stop_event=threading.Event(),
                reader=reader,
                protocol=server.protocol,
                logger=log,
                error_handler=server.report_server_error,
            )
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            clients[0] -= 1
            writer.close()

    await asyncio.start_unix_server(connection, path=socket_path, limit=1024 * 1024)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(sys.argv[1]))
