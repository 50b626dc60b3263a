"""The real rtrain daemon, plus counters the scale benchmark reads from a file.

After every monitor poll it writes, to $RTRAIN_BENCH_COUNTS: the monitor's own `polls`
(remote status commands it sent), every remote command by host and script (as an exec
host's transport takes it, whether a long-lived shell or a channel of its own carries it),
the number of poll rounds and how long the last one took. Nothing else of the daemon
changes.

    python -m bench.counting_daemon        # in the environment of an isolated daemon
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rtrain.daemon.monitor import Monitor
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.ssh.transport import Completed

COUNTS = Path(os.environ["RTRAIN_BENCH_COUNTS"])
commands: Counter[str] = Counter()
rounds = {"count": 0, "last_s": 0.0}

_original_run = ExecTransport.run
_original_poll_once = Monitor.poll_once


async def _counting_run(
    self: ExecTransport, name: str, args: Sequence[str], **options: Any
) -> Completed:
    commands[f"{self.alias} {name}"] += 1
    return await _original_run(self, name, args, **options)


async def _counting_poll_once(self: Monitor) -> None:
    started = time.monotonic()
    await _original_poll_once(self)
    rounds["count"] += 1
    rounds["last_s"] = time.monotonic() - started
    temporary = COUNTS.with_name(COUNTS.name + ".tmp")
    temporary.write_text(
        json.dumps({"polls": self.polls, "rounds": rounds, "commands": dict(commands)})
    )
    os.replace(temporary, COUNTS)


ExecTransport.run = _counting_run  # type: ignore[method-assign,unused-ignore]
Monitor.poll_once = _counting_poll_once  # type: ignore[method-assign,unused-ignore]

if __name__ == "__main__":
    from rtrain.daemon.main import main

    sys.exit(main(sys.argv[1:]))
