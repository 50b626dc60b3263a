"""One connected client: its protocol state, its running requests, its outgoing queue.

Each request runs as its own task, so a slow operation never blocks the connection, and
`$/cancelRequest` cancels exactly that task. Outgoing bytes go through a bounded queue
drained by one writer task: a client that stops reading is dropped instead of holding
memory or blocking broadcasts to everyone else.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rtrain.protocol import errors as e
from rtrain.protocol.connection import Connection
from rtrain.protocol.events import ConnectionBroken, Notification, Request
from rtrain.protocol.lifecycle import State

from .local_disk import refused_anywhere

log = logging.getLogger(__name__)

# Frames waiting for a client that does not read; past this the client is dropped.
MAX_QUEUED_FRAMES = 4096
_ids = itertools.count(1)


class RequestContext:
    """What a handler may do besides returning: talk to its own client."""

    def __init__(self, session: ClientSession, request_id: int | str) -> None:
        self.session = session
        self.request_id = request_id

    def notify(self, method: str, params: Any) -> None:
        self.session.notify(method, params)


Handler = Callable[[Any, RequestContext], Awaitable[Any]]


class ClientSession:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatch: Callable[[str], Handler | None],
        peer_pid: int | None = None,
    ) -> None:
        self.id = next(_ids)
        self.peer_pid = peer_pid
        self.client_name: str | None = None
        self.subscribed = False
        self.on_close: list[Callable[[ClientSession], None]] = []
        self._reader = reader
        self._writer = writer
        self._dispatch = dispatch
        self._conn = Connection()
        self._tasks: dict[int | str, asyncio.Task[None]] = {}
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(MAX_QUEUED_FRAMES)
        self._closed = False

    async def serve(self) -> None:
        writer_task = asyncio.create_task(self._write_loop())
        try:
            while not self._closed:
                data = await self._reader.read(256 * 1024)
                if not data:
                    break
                for event in self._conn.receive_data(data):
                    self._handle(event)
                self._flush()
                if self._conn.broken or self._conn.state is State.EXITED:
                    break
        except (ConnectionError, OSError) as error:
            log.info("client %s: connection lost: %s", self.id, error)
        finally:
            await self._finish(writer_task)

    def notify(self, method: str, params: Any) -> None:
        if self._closed:
            return
        self._conn.send_notification(method, params)
        self._flush()

    def close(self) -> None:
        self._closed = True
        self._writer.close()

    # ---- events ---------------------------------------------------------------------

    def _handle(self, event: Any) -> None:
        if isinstance(event, Request):
            if event.method == "initialize" and event.params.client_info is not None:
                self.client_name = event.params.client_info.name
            task = asyncio.create_task(self._answer(event))
            task.add_done_callback(functools.partial(self._answer_if_cancelled, request=event))
            self._tasks[event.id] = task
        elif isinstance(event, Notification):
            if event.method == "$/cancelRequest":
                cancelled = self._tasks.get(event.params.id)
                if cancelled is not None:
                    cancelled.cancel()
        elif isinstance(event, ConnectionBroken):
            log.info("client %s broke the protocol: %s", self.id, event.reason)

    async def _answer(self, request: Request) -> None:
        handler = self._dispatch(request.method)
        try:
            if handler is None:
                raise e.RpcError(
                    e.METHOD_NOT_FOUND,
                    f"{request.method} is not implemented by this daemon yet.",
                    {"kind": e.Kind.NOT_IMPLEMENTED, "method": request.method},
                )
            result = await handler(request.params, RequestContext(self, request.id))
        except e.RpcError as error:
            self._reply_error(request.id, error)
            return
        except OSError as error:  # this machine's disk said no: the user's to fix
            log.warning("%s: %s", request.method, error)
            self._reply_error(request.id, refused_anywhere(error))
            return
        except Exception as error:  # a bug: answer, log, and keep serving
            log.exception("internal error in %s", request.method)
            self._reply_error(
                request.id,
                e.RpcError(
                    e.INTERNAL_ERROR,
                    f"Internal error in {request.method}: {error}. See `rtrain daemon logs`.",
                ),
            )
            return
        finally:
            self._tasks.pop(request.id, None)
        if not self._closed:
            self._conn.send_result(request.id, result)
            self._flush()

    def _answer_if_cancelled(self, task: asyncio.Task[None], request: Request) -> None:
        """A cancelled request still gets its answer: -32800. (A task cancelled before it
        ever ran never reaches its own except clauses, hence a callback.)"""
        self._tasks.pop(request.id, None)
        if task.cancelled() and request.id in self._conn.awaiting_answer:
            self._reply_error(
                request.id, e.RpcError(e.REQUEST_CANCELLED, f"{request.method} was cancelled.")
            )

    def _reply_error(self, request_id: int | str, error: e.RpcError) -> None:
        if not self._closed:
            self._conn.send_error(request_id, error)
            self._flush()

    # ---- output ---------------------------------------------------------------------

    def _flush(self) -> None:
        data = self._conn.data_to_send()
        if not data or self._closed:
            return
        try:
            self._queue.put_nowait(data)
        except asyncio.QueueFull:
            log.warning("client %s is not reading; dropping it", self.id)
            self.close()

    async def _write_loop(self) -> None:
        while True:
            data = await self._queue.get()
            if data is None:
                return
            self._writer.write(data)
            await self._writer.drain()

    async def _finish(self, writer_task: asyncio.Task[None]) -> None:
        tasks = list(self._tasks.values())
        # Let answers already queued (e.g. a framing error reply) reach the client first.
        if not self._queue.full():
            self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(writer_task, timeout=2)
        except (TimeoutError, ConnectionError, OSError):
            writer_task.cancel()
        self._closed = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for callback in self.on_close:
            callback(self)
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass
