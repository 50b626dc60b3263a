"""The daemon's log is capped: past its size it moves to daemon.log.1 and starts afresh, and
what the daemon prints on its own stderr follows to the fresh file."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rtrain.daemon.daemon_log import CappedLogHandler

CAP = 4096


def test_the_log_never_holds_more_than_its_cap_and_stderr_follows(tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    # The daemon's stderr as a client starts it: appended to the log.
    stderr = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    handler = CappedLogHandler(path, max_bytes=CAP, followers=[stderr])
    logger = logging.Logger("capped-log-test")
    logger.addHandler(handler)
    try:
        for number in range(1000):
            logger.warning("line %d %s", number, "x" * 60)
        os.write(stderr, b"Traceback: the daemon's last words\n")
    finally:
        handler.close()
        os.close(stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.log", "daemon.log.1"]
    assert path.stat().st_size <= CAP + 100 and (tmp_path / "daemon.log.1").stat().st_size <= CAP
    text = path.read_text()
    # The newest records and the later stderr are in the live file, in the order written.
    assert "line 999 " in text
    assert text.endswith("Traceback: the daemon's last words\n")
    assert "last words" not in (tmp_path / "daemon.log.1").read_text()
