"""A TCP proxy between ssh and sshd that imitates a WAN link (the kernel here has no netem).

Each chunk is delivered `delay_s` after it arrived, in both directions, order kept: a one-way
delay D, so a round trip costs 2D while throughput is not throttled. stall() freezes the link
with every socket left open (a dead route), resume() thaws it, cut() closes every connection
at once (a reset). The event loop runs in a daemon thread; close() ends it.
"""

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

CHUNK_BYTES = 64 * 1024
# Chunks buffered per direction before the proxy stops reading (bounds memory, keeps
# TCP back-pressure working while stalled).
CHUNKS_IN_FLIGHT = 64
CALL_TIMEOUT_S = 10.0

T = TypeVar("T")


class TcpProxy:
    """Listens on 127.0.0.1:`port` and forwards to 127.0.0.1:`target_port`."""

    def __init__(self, target_port: int, delay_s: float = 0.0) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"tcp-proxy-{target_port}", daemon=True
        )
        self._thread.start()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connections: set[_Connection] = set()
        self._flowing = asyncio.Event()
        self._held = 0  # chunks due but waiting for a stalled link to flow again
        self._closed = False
        try:
            self._server = self._call(self._listen())
        except BaseException:
            self._stop_loop()
            raise
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def connection_count(self) -> int:
        """Connections currently open through the proxy."""
        return len(self._connections)

    @property
    def held(self) -> int:
        """Chunks that are due but wait for the stalled link (either direction): the event a
        test waits for to know its traffic is caught in the stall."""
        return self._held

    def stall(self) -> None:
        """Stop forwarding in both directions; sockets stay open and data waits."""
        self._call(self._set_flowing(False))

    def resume(self) -> None:
        """Forward again, starting with what waited during the stall."""
        self._call(self._set_flowing(True))

    def cut(self) -> None:
        """Close every open connection now; new connections are still accepted."""
        self._call(self._cut())

    def close(self) -> None:
        """Stop listening, close every connection and end the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._call(self._shutdown())
        finally:
            self._stop_loop()

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- inside the loop thread ------------------------------------------------------

    async def _listen(self) -> asyncio.Server:
        self._flowing.set()
        return await asyncio.start_server(self._serve, host="127.0.0.1", port=0)

    async def _set_flowing(self, flowing: bool) -> None:
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _cut(self) -> None:
        # Abort first so both peers see the close even if a handler is slow to unwind.
        for connection in list(self._connections):
            connection.abort()
        handlers = list(self._tasks)
        for handler in handlers:
            handler.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=CALL_TIMEOUT_S / 2)

    async def _shutdown(self) -> None:
        self._server.close()
        await self._cut()
        await self._server.wait_closed()

    async def _serve(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        connection: _Connection | None = None
        try:
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(
                    "127.0.0.1", self.target_port
                )
            except OSError:
                return  # target down: the client sees its connection closed
            connection = _Connection(client_writer, upstream_writer)
            self._connections.add(connection)
            pumps = [
                asyncio.create_task(self._pump(client_reader, upstream_writer)),
                asyncio.create_task(self._pump(upstream_reader, client_writer)),
            ]
            try:
                # Both directions ended (EOF each way), or one failed: the connection is over.
                await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except asyncio.CancelledError:
            pass
        finally:
            if connection is not None:
                self._connections.discard(connection)
                connection.abort()
                await connection.wait_closed()
            else:
                client_writer.transport.abort()
                await _closed(client_writer)
            self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Forward one direction: chunks are stamped on arrival and written D later."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(maxsize=CHUNKS_IN_FLIGHT)

        async def receive() -> None:
            while True:
                chunk = await reader.read(CHUNK_BYTES)
                await queue.put((loop.time() + self.delay_s, chunk))
                if not chunk:
                    return

        async def send() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not self._flowing.is_set():
                    self._held += 1
                    try:
                        await self._flowing.wait()
                    finally:
                        self._held -= 1
                if not chunk:
                    if writer.can_write_eof():
                        writer.write_eof()  # half-close, as the sender did
                    return
                writer.write(chunk)
                await writer.drain()

        receiving = asyncio.create_task(receive())
        try:
            await send()
            await receiving
        finally:
            receiving.cancel()
            await asyncio.gather(receiving, return_exceptions=True)

    # -- from the caller's thread ----------------------------------------------------

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(CALL_TIMEOUT_S)

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()


class _Connection:
    """Both sockets of one proxied connection."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream

    def abort(self) -> None:
        self.client.transport.abort()
        self.upstream.transport.abort()

    async def wait_closed(self) -> None:
        await _closed(self.client)
        await _closed(self.upstream)


async def _closed(writer: asyncio.StreamWriter) -> None:
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
