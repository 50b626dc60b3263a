"""run/start: validate everything first, ship the inputs checksummed, launch detached."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import re
import secrets
import time
from pathlib import Path

from rtrain.daemon.client_session import RequestContext
from rtrain.daemon.remote import demo_trainer_source
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import ProgressParams, RunInfo, StartParams, StartResult

from .context import Ops, now

CONFIG_NAME = "config.yaml"
DEMO_TRAINER = "demo_trainer.py"
# Names the run dir already uses; a dataset may not take them.
RESERVED = {
    CONFIG_NAME,
    DEMO_TRAINER,
    "train.log",
    "train.pid",
    "status",
    "meta.json",
    "stop_requested",
    "launch.sh",
}
PLACEHOLDERS = ("{python}", "{config}", "{dataset}", "{run_dir}", "{gpus}")
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def new_run_id() -> str:
    return f"run-{int(time.time())}-{secrets.token_hex(2)}"


async def start(ops: Ops, p: StartParams, ctx: RequestContext) -> StartResult:
    # Everything a user can get wrong is refused here, before any ssh runs.
    validation.host(p.host)
    run_id = validation.run_id(p.run_id) if p.run_id is not None else new_run_id()
    settings = ops.hosts.config.host(p.host)
    workdir = validation.workdir(p.workdir)
    python = validation.python(p.python)
    for name in p.secrets:
        validation.secret_name(name)
        if name.startswith("RTRAIN_"):
            # The far side keeps RTRAIN_* for itself (the run marker); refuse it here, before
            # a run directory is made, rather than leave a half-started run behind.
            raise app_error(
                Kind.INVALID_SECRET,
                f"secret name {name!r} is reserved: rtrain uses RTRAIN_* names itself.",
            )
    config = _local_file(p.config, "config")
    dataset = _local_file(p.dataset, "dataset") if p.dataset else None
    if dataset is not None and dataset.name in RESERVED:
        raise app_error(
            Kind.INVALID_PATH,
            f"the dataset may not be called {dataset.name!r}: "
            "rtrain uses that name in the run directory; rename it.",
        )
    # An explicit empty command is a mistake to report, not a request for the demo trainer.
    template = p.command if p.command is not None else settings.command
    _check_template(template, dataset is not None)
    if ops.known(p.host, run_id) is not None:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {run_id} already exists on {p.host}; pick another --run-id.",
            runId=run_id,
        )

    transport = await ops.transport(p.host)
    prepared = await transport.run("prepare", [workdir, run_id], timeout=60)
    if prepared.returncode == 17 or prepared.fields().get("error") == ["run_exists"]:
        raise app_error(
            Kind.RUN_EXISTS,
            f"run {run_id} already exists on {p.host}; pick another --run-id.",
            runId=run_id,
        )
    run_dir = (prepared.fields().get("run_dir") or [""])[0]
    if prepared.returncode != 0 or not run_dir:
        raise app_error(
            Kind.REMOTE_FAILED,
            f"{p.host}: could not create the run directory: {prepared.error_text}",
        )

    shipments: list[tuple[Path | bytes, str]] = [(config, CONFIG_NAME)]
    if dataset is not None:
        shipments.append((dataset, dataset.name))
    if template is None:
        shipments.append((demo_trainer_source(), DEMO_TRAINER))
    uploaded = await _ship(ops, transport, run_dir, shipments, p, ctx)

    command = _expand(
        template or _demo_command(dataset),
        python=python,
        dataset=dataset,
        run_dir=run_dir,
        gpus=p.gpus,
    )
    secret_lines = "".join(
        f"{name}\t{base64.b64encode(value.encode()).decode()}\n"
        for name, value in p.secrets.items()
    )

    async def launch() -> StartResult:
        launched = await transport.run(
            "launch", [run_dir, run_id, python, *command], stdin=secret_lines.encode(), timeout=60
        )
        fields = launched.fields()
        if launched.returncode != 0 or "pid" not in fields:
            # The script says why on stdout (`error KIND ...`) and sometimes on stderr.
            why = " ".join(fields.get("error", [])) or launched.error_text
            raise app_error(Kind.REMOTE_FAILED, f"{p.host}: the trainer did not start: {why}")
        started_at = float(fields.get("started_at", [now()])[0])
        run = ops.record(
            RunInfo(
                host=p.host,
                run_id=run_id,
                state="running",
                remote_dir=run_dir,
                log_path=f"{run_dir}/train.log",
                workdir=workdir,
                command=command,
                created_at=now(),
                started_at=started_at,
                last_seen=now(),
            )
        )
        return StartResult(run=run, pid=int(fields["pid"][0]), uploaded_bytes=uploaded)

    # Once the launch has begun it is finished and recorded even if the client cancels:
    # the answer then says the run started, so a start never leaves an untold trainer.
    launching = asyncio.ensure_future(launch())
    try:
        return await asyncio.shield(launching)
    except asyncio.CancelledError:
        return await launching


def _local_file(path: str, what: str) -> Path:
    local = Path(path).expanduser()
    if not local.is_file():
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"the {what} {path!r} does not exist or is not a file."
        )
    return local.resolve()


def _check_template(template: list[str] | None, has_dataset: bool) -> None:
    if template is None:
        return
    if not template or not template[0]:
        raise app_error(Kind.INVALID_COMMAND, "the command is empty.")
    if not has_dataset and any("{dataset}" in word for word in template):
        raise app_error(
            Kind.INVALID_COMMAND, "the command uses {dataset} but no dataset was given (--dataset)."
        )
    for word in template:
        # Only `{name}` is taken for a placeholder: braces of code in the command (a dict in
        # `python -c`, JSON) are the user's own text.
        unknown = [p for p in _PLACEHOLDER.findall(word) if p not in PLACEHOLDERS]
        if unknown:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"unknown placeholder in {word!r}; known: " + ", ".join(PLACEHOLDERS),
            )


def _demo_command(dataset: Path | None) -> list[str]:
    command = ["{python}", DEMO_TRAINER, "--config", "{config}"]
    return command + (["--dataset", "{dataset}"] if dataset is not None else [])


def _expand(
    template: list[str], *, python: str, dataset: Path | None, run_dir: str, gpus: int
) -> list[str]:
    values = {
        "{python}": python,
        "{config}": CONFIG_NAME,
        "{run_dir}": run_dir,
        "{gpus}": str(gpus),
        "{dataset}": dataset.name if dataset else "",
    }
    words = []
    for word in template:
        for placeholder, value in values.items():
            word = word.replace(placeholder, value)
        words.append(word)
    return words


async def _ship(
    ops: Ops,
    transport: Transport,
    run_dir: str,
    shipments: list[tuple[Path | bytes, str]],
    p: StartParams,
    ctx: RequestContext,
) -> int:
    total = sum(len(s) if isinstance(s, bytes) else s.stat().st_size for s, _ in shipments)
    done = 0
    token = p.progress_token

    def report(kind: str, message: str | None = None) -> None:
        if token is not None:
            ctx.notify(
                "$/progress",
                ProgressParams(
                    token=token,
                    kind=kind,  # type: ignore[arg-type]
                    title=f"Shipping to {p.host}",
                    message=message,
                    done_bytes=done,
                    total_bytes=total,
                ),
            )

    last = 0.0

    def advance(count: int) -> None:
        nonlocal done, last
        done += count
        if time.monotonic() - last > 0.1 or done == total:
            last = time.monotonic()
            report("report")

    report("begin")
    for source, name in shipments:
        if isinstance(source, bytes):
            path, temporary = _bytes_file(source), True
        else:
            path, temporary = source, False
        try:
            digest = await asyncio.to_thread(_sha256, path)
            await transport.upload(path, f"{run_dir}/{name}", digest, advance)
        finally:
            if temporary:
                os.unlink(path)
    report("end", f"{total} bytes verified")
    return total


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _bytes_file(data: bytes) -> Path:
    import tempfile

    fd, name = tempfile.mkstemp(prefix="rtrain-ship-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)
