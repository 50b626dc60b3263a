"""run/exec: one command in a run's directory on the host; its exit code and its output."""

from __future__ import annotations

from rtrain.daemon.remote.contract import run_scripts
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import ExecParams, ExecResult

from .context import DaemonState
from .run_proof import refuse_unless_run

# Output beyond this is cut (with a note): exec is for a quick look, fetch is for files.
MAX_OUTPUT = 16 * 1024 * 1024


async def run_exec(ops: DaemonState, p: ExecParams) -> ExecResult:
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    if not p.command or not p.command[0]:
        raise app_error(Kind.INVALID_COMMAND, "the command is empty.")
    if any("\0" in word for word in p.command):
        raise app_error(Kind.INVALID_COMMAND, "the command holds a NUL byte.")
    transport = await ops.transport(p.host)
    done = await run_scripts.exec_in_run(transport, run_dir, p.run_id, p.command, p.timeout)
    if not done.started:
        refuse_unless_run(done, p.host, p.run_id, run_dir, "nothing was run")
        word = done.error.word if done.error is not None else None
        if word == ErrorWord.RUN_NOT_FOUND:
            raise app_error(Kind.RUN_NOT_FOUND, f"no run {p.run_id} on {p.host} ({run_dir}).")
        if word == ErrorWord.NO_PROGRAM:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"{p.command[0]} is not a program on {p.host} (not on PATH, nor an "
                "executable file in the run directory).",
            )
        raise app_error(
            Kind.REMOTE_FAILED, f"{p.host}: exec failed: {done.error or done.error_text}"
        )
    return ExecResult(exit_code=done.exit, stdout=_text(done.stdout), stderr=_text(done.stderr))


def _text(data: bytes) -> str:
    if len(data) > MAX_OUTPUT:
        cut = len(data) - MAX_OUTPUT
        data = data[:MAX_OUTPUT] + f"\n[rtrain: {cut} more bytes not shown]\n".encode()
    return data.decode(errors="replace")
