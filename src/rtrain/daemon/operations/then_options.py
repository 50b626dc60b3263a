"""A start's `--then-fetch PATH [-o DIR] [--then-terminate]`, judged before any SSH, as the
plan the daemon carries out once the run completes (daemon/after_run.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import AfterRun, StartParams


def after_run_plan(p: StartParams, terminate_command: str | None) -> AfterRun | None:
    """The plan `p` asks for (None: nothing after the run). `terminate_command`: the host's
    configured one, without which `thenTerminate` is refused."""
    if p.then_fetch is None and p.then_fetch_into is None and not p.then_terminate:
        return None
    fetch = validation.fetch_path(p.then_fetch) if p.then_fetch is not None else None
    into = None
    if p.then_fetch_into is not None:
        if fetch is None:
            raise app_error(
                Kind.INVALID_PATH, "a directory to fetch into needs --then-fetch PATH too."
            )
        if not Path(p.then_fetch_into).is_absolute():
            # The daemon does not share the client's working directory.
            raise app_error(
                Kind.INVALID_PATH, f"{p.then_fetch_into!r} is not an absolute local path."
            )
        into = p.then_fetch_into
        _fetchable_into(Path(into))
    elif fetch is not None:
        raise app_error(Kind.INVALID_PATH, "--then-fetch needs a local directory to fetch into.")
    if p.then_terminate and not terminate_command:
        raise app_error(
            Kind.INVALID_COMMAND,
            f"--then-terminate needs {p.host}'s terminate command: set "
            f'terminate = "..." under [hosts.{p.host}] in config.toml (for a RunPod pod: '
            'terminate = "runpodctl remove pod $RUNPOD_POD_ID").',
        )
    return AfterRun(fetch=fetch, into=into, terminate=p.then_terminate)


def _fetchable_into(into: Path) -> None:
    """Refuse, now rather than after hours of training, a directory the fetch could not write
    into: its nearest existing ancestor must take a new directory (tried, and removed)."""
    probe = into
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(f"{probe} is not a directory")
        tempfile.TemporaryDirectory(dir=probe, prefix=".rtrain-probe-").cleanup()
    except OSError as error:
        why = error.strerror or str(error)
        raise app_error(
            Kind.INVALID_PATH,
            f"cannot fetch into {into} after the run: {probe}: {why}; nothing was started.",
        ) from None
