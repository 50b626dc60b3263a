"""Another laptop of the same user: a daemon of its own (its own socket, registry and
config), reaching the same hosts."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.cli.rtrain_command import run_rtrain


@contextlib.contextmanager
def second_daemon_env(env: Mapping[str, str], cwd: Path) -> Iterator[dict[str, str]]:
    """`env` with XDG directories of its own; the daemon started there is stopped after."""
    root = Path(tempfile.mkdtemp(prefix="rt2-", dir="/tmp"))
    other = dict(env)
    for name in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        path = root / name.lower()
        path.mkdir(mode=0o700)
        other[name] = str(path)
    try:
        yield other
    finally:
        run_rtrain(["daemon", "stop"], env=other, cwd=cwd)
        shutil.rmtree(root, ignore_errors=True)
