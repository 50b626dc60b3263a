"""config.toml's `notify`: a command of the user's that runs on this machine when a run ends
(docs/cli.md, "A word when a run ends").

The run's host, id, state and reason reach it only as environment variables (RTRAIN_HOST,
RTRAIN_RUN_ID, RTRAIN_STATE, RTRAIN_REASON, RTRAIN_EXIT_CODE), never inside the command's
text, so nothing a host or a trainer wrote is ever read by a shell as shell. The command
gets the daemon's own environment (the user's, from the client that started it) less every
variable whose name says it holds a credential (`HF_TOKEN`, `WANDB_API_KEY`,
`AWS_SECRET_ACCESS_KEY`, ...), plus those: not the run's `env`, and never a secret. A string
is run by the user's shell (`$SHELL -c`, as written); a list is run as it stands, no shell.

A run's end is told once: when the daemon sees it go from not ended to ended (each attempt
of a restarted run has its own end). A run that had ended before this daemon first saw it
is not told again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from pathlib import Path

from rtrain.protocol.messages import RunInfo
from rtrain.protocol.run_states import is_ended

from .user_config import UserConfig

log = logging.getLogger(__name__)

# A notify command that runs longer is killed: a hook, not a job.
NOTIFY_TIMEOUT_S = 60.0
# As much of its output as the daemon log keeps.
OUTPUT_KEPT = 2000
# Names of variables that hold credentials: kept from a notify command (a hook that needs one
# reads it from a file of its own).
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL", re.I)
# How long a stopping daemon waits for the commands under way.
CLOSE_GRACE_S = 5.0


class RunEndNotify:
    def __init__(self, config: UserConfig, known: list[RunInfo]) -> None:
        self.config = config
        # (host, run_id) -> (state, attempt) as last seen; starts from the registry.
        self._last: dict[tuple[str, str], tuple[str, int]] = {
            (run.host, run.run_id): (run.state, len(run.attempts)) for run in known
        }
        self._tasks: set[asyncio.Task[None]] = set()

    def seen(self, run: RunInfo) -> None:
        """Every published change of a run (wiring's publish) comes here."""
        key = (run.host, run.run_id)
        now = (run.state, len(run.attempts))
        before = self._last.get(key)
        self._last[key] = now
        if before is None or not is_ended(run.state):
            return
        if is_ended(before[0]) and before[1] == now[1]:
            return  # this end was told already
        command = self.command(run.host)
        if command is None:
            return
        task = asyncio.get_running_loop().create_task(_run(command, run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def forget(self, run: RunInfo) -> None:
        self._last.pop((run.host, run.run_id), None)

    def command(self, host: str) -> str | list[str] | None:
        """The host's own `notify`, else the global one; an empty one means none."""
        chosen = self.config.host(host).notify
        if chosen is None:
            chosen = self.config.notify
        return chosen or None

    async def close(self) -> None:
        """Give the commands under way a moment to finish, then end them."""
        tasks = list(self._tasks)
        if tasks:
            _, left = await asyncio.wait(tasks, timeout=CLOSE_GRACE_S)
            for task in left:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def notify_environment(run: RunInfo) -> dict[str, str]:
    """The variables a notify command gets besides the daemon's own environment."""
    told = {
        "RTRAIN_HOST": run.host,
        "RTRAIN_RUN_ID": run.run_id,
        "RTRAIN_STATE": run.state,
        "RTRAIN_REASON": run.reason or "",
        "RTRAIN_EXIT_CODE": "" if run.exit_code is None else str(run.exit_code),
    }
    # A NUL cannot be in an environment; a reason from a host could hold one.
    return {name: value.replace("\0", "") for name, value in told.items()}


async def _run(command: str | list[str], run: RunInfo) -> None:
    if isinstance(command, str):
        argv = [os.environ.get("SHELL") or "/bin/sh", "-c", command]
    else:
        argv = list(command)
    kept = {name: value for name, value in os.environ.items() if not SECRET_NAME.search(name)}
    env = {**kept, **notify_environment(run)}
    what = f"notify for {run.host}/{run.run_id} ({run.state})"
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            cwd=Path.home(),
            start_new_session=True,
        )
    except OSError as error:
        log.warning("%s could not start: %s", what, error)
        return
    try:
        async with asyncio.timeout(NOTIFY_TIMEOUT_S):
            out, _ = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        log.warning("%s ran past %.0f s and was killed", what, NOTIFY_TIMEOUT_S)
        return
    finally:
        if proc.returncode is None:  # cancelled: the daemon stops
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
    text = out.decode(errors="replace").strip()[-OUTPUT_KEPT:]
    if proc.returncode == 0:
        log.info("%s ran%s", what, f": {text}" if text else "")
    else:
        log.warning("%s exited %s%s", what, proc.returncode, f": {text}" if text else "")
