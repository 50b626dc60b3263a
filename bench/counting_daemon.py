"""The real rtrain daemon, plus counters the scale benchmark reads from a file.

After every monitor poll it writes, to $RTRAIN_BENCH_COUNTS: the monitor's own `polls`
(remote status commands it sent), every remote command by host and script (as an exec
host's transport takes it, whether a long-lived shell or a channel of its own carries it),
the number of poll rounds and how long the last one took; and the bytes each script sent
(its text and its stdin, or the bytes streamed into it; launch.sh opened ahead counts its
stdin once fed). With $RTRAIN_BENCH_COUNT_EVERY_CALL set it writes after every remote
command too (bench/warm_start.py). Nothing else of the daemon changes.

    python -m bench.counting_daemon        # in the environment of an isolated daemon
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any

from rtrain.daemon.monitor import Monitor
from rtrain.daemon.remote import script
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.transports.transport import Completed

COUNTS = Path(os.environ["RTRAIN_BENCH_COUNTS"])
EVERY_CALL = bool(os.environ.get("RTRAIN_BENCH_COUNT_EVERY_CALL"))
commands: Counter[str] = Counter()
sent: Counter[str] = Counter()
# (host and script, began, ended) of each remote command, epoch seconds (with EVERY_CALL)
timeline: list[tuple[str, float, float]] = []
rounds = {"count": 0, "last_s": 0.0}

_original_run = ExecTransport.run
_original_stream_in = ExecTransport.stream_in
# None in an rtrain older than launches opened ahead (a before-and-after run of the bench).
_original_run_fed: Any = getattr(ExecTransport, "run_fed", None)
_original_poll_once = Monitor.poll_once


async def _counted(key: str, call: Awaitable[Completed]) -> Completed:
    """`call`, one far call under `key` (its bytes are counted by the caller), on the
    timeline with EVERY_CALL."""
    commands[key] += 1
    began = time.time()
    try:
        return await call
    finally:
        if EVERY_CALL:
            timeline.append((key, began, time.time()))
            _write()


async def _counting_run(
    self: ExecTransport, name: str, args: Sequence[str], **options: Any
) -> Completed:
    key = f"{self.alias} {name}"
    sent[key] += len(script(name).encode()) + len(options.get("stdin") or b"")
    return await _counted(key, _original_run(self, name, args, **options))


async def _counting_run_fed(
    self: ExecTransport, name: str, args: Sequence[str], feed: Any, **options: Any
) -> Completed:
    """A script opened now and fed later (a launch opened ahead): its stdin counts once fed."""
    key = f"{self.alias} {name}"
    sent[key] += len(script(name).encode())

    def fed(done: Any) -> None:
        if not done.cancelled():
            sent[key] += len(done.result())

    feed.add_done_callback(fed)
    return await _counted(key, _original_run_fed(self, name, args, feed, **options))


async def _counting_stream_in(
    self: ExecTransport, name: str, args: Sequence[str], chunks: Any, **options: Any
) -> Completed:
    """A script fed a byte stream (an upload's piece): its text and the bytes streamed."""
    key = f"{self.alias} {name}"
    sent[key] += len(script(name).encode())

    def counted() -> Any:
        for chunk in chunks():
            sent[key] += len(chunk)
            yield chunk

    return await _counted(key, _original_stream_in(self, name, args, counted, **options))


async def _counting_poll_once(self: Monitor) -> None:
    started = time.monotonic()
    await _original_poll_once(self)
    rounds["count"] += 1
    rounds["last_s"] = time.monotonic() - started
    polls["count"] = self.polls
    _write()


polls = {"count": 0}


def _write() -> None:
    temporary = COUNTS.with_name(COUNTS.name + ".tmp")
    temporary.write_text(
        json.dumps(
            {
                "polls": polls["count"],
                "rounds": rounds,
                "commands": dict(commands),
                "sent": dict(sent),
                "timeline": timeline[-50:],
            }
        )
    )
    os.replace(temporary, COUNTS)


ExecTransport.run = _counting_run  # type: ignore[method-assign,unused-ignore]
ExecTransport.stream_in = _counting_stream_in  # type: ignore[method-assign,unused-ignore]
if _original_run_fed is not None:
    ExecTransport.run_fed = _counting_run_fed  # type: ignore[method-assign,unused-ignore]
Monitor.poll_once = _counting_poll_once  # type: ignore[method-assign,unused-ignore]

if __name__ == "__main__":
    from rtrain.daemon.main import main

    sys.exit(main(sys.argv[1:]))
