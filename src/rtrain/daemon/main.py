"""Start the daemon: private directories, the single-instance lock, logging, the loop."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from rtrain.protocol import locations
from rtrain.protocol.daemon_process import LOST_RACE

from .daemon_log import setup_daemon_log
from .instance_lock import AlreadyRunning, InstanceLock
from .private_dir import UnsafeDirectory, ensure_private_dir
from .registry import Registry
from .server import SocketServer
from .service import Service

log = logging.getLogger("rtrain.daemon")


def main(argv: list[str]) -> int:
    foreground = "--foreground" in argv
    # A daemon started from inside a run (on `local`) must not carry that run's marker into
    # every later run, or stop would count them as one.
    os.environ.pop("RTRAIN_RUN_ID", None)
    try:
        runtime = ensure_private_dir(locations.runtime_dir())
        state = ensure_private_dir(locations.state_dir())
    except UnsafeDirectory as error:
        print(f"rtrain daemon: {error}", file=sys.stderr)
        return 2
    socket_path = locations.socket_path()
    if socket_path.parent != runtime:
        try:
            ensure_private_dir(socket_path.parent)
        except UnsafeDirectory as error:
            print(f"rtrain daemon: {error}", file=sys.stderr)
            return 2
    lock = InstanceLock(socket_path.parent / "rtrain.lock")
    try:
        lock.acquire()
    except AlreadyRunning:
        # Losing the start-up race is normal: the other daemon serves everyone.
        print(f"rtrain daemon: {LOST_RACE}", file=sys.stderr)
        return 0
    setup_daemon_log(locations.log_path(), foreground)
    registry, damage = Registry.open_or_replace(state / "registry.sqlite3")
    service = Service(socket_path, runtime, state, locations.log_path(), registry)
    if damage is not None:
        log.warning("%s", damage)
        service.notices.append(damage)
    try:
        asyncio.run(_serve(service))
    finally:
        registry.close()
        lock.release()
    return 0


async def _serve(service: Service) -> None:
    from .wiring import wire_operations

    server = SocketServer(service.socket_path, service.dispatch)
    service.sessions = server.sessions
    closers = wire_operations(service)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, service.stop_requested.set)
    await server.start()
    log.info("rtrain daemon %s listening on %s", os.getpid(), service.socket_path)
    try:
        await service.stop_requested.wait()
    finally:
        log.info("stopping")
        await server.close()
        for close in closers:
            await close()
        log.info("stopped")
