"""`rtrain preflight`: can a host train, and what stands in the way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests, validation
from rtrain.protocol.errors import Kind, RpcError

from .exit_codes import ClientKind
from .input_checks import check
from .local_secrets import local_secrets
from .output import fail, friendly_errors, print_json
from .progress import StatusLine
from .shared_options import HostArg, JsonOpt
from .ship_summary import FollowLinksOpt, IncludeOpt

# How each finding's level shows in front of it: problems and warnings stand out.
_FINDING_MARKS = {"problem": "✗ ", "warning": "! ", "info": "· "}


@friendly_errors
def preflight(
    host: str = HostArg,
    gpus: int = typer.Option(1, "--gpus", min=0, help="GPUs the host must have."),
    python: str | None = typer.Option(
        None, "--python", help="Interpreter on the host (default python3, or the host's)."
    ),
    workdir: str | None = typer.Option(
        None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
    ),
    require: list[str] = typer.Option(
        [], "--require", help="A package the python must have, e.g. 'transformers>=5'."
    ),
    require_file: list[Path] = typer.Option(
        [], "--require-file", help="A requirements.txt whose packages the python must have."
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="The config start would ship (its size is checked)."
    ),
    dataset: list[Path] = typer.Option(
        [], "--dataset", "-d", help="A dataset file or directory start would ship."
    ),
    code: Path | None = typer.Option(None, "--code", help="The code directory start would ship."),
    include: list[str] = IncludeOpt,
    follow_links: bool = FollowLinksOpt,
    inputs: list[Path] = typer.Option(
        [], "--inputs", "--input", help="Any other local file or directory to be shipped."
    ),
    hf_model: list[str] = typer.Option(
        [], "--hf-model", help="A Hugging Face model (ORG/NAME) the host must download."
    ),
    requirements: Path | None = typer.Option(
        None,
        "--requirements",
        metavar="FILE",
        help="Build the environment start --requirements FILE runs in now (or find it built).",
    ),
    image: str | None = typer.Option(
        None,
        "--image",
        metavar="NAME",
        help="Check the container image start --image NAME runs in: the host's runtime, the "
        "image in its store, the GPUs it sees.",
    ),
    secret: list[str] = typer.Option(
        [],
        "--secret",
        help="A local environment variable the run gets; HF_TOKEN is tried on the Hub.",
    ),
    json: bool = JsonOpt,
) -> None:
    """Check that HOST can train: reachable, the python with torch and its CUDA, GPUs and
    their use, packages, disk for what start would ship, Hugging Face access."""
    check(host=host, workdir=workdir, python=python)
    requires = _requirements(require, require_file, hf_model)
    others = [*dataset, *inputs]
    for path in [p for p in (config, code, *others) if p is not None]:
        if not path.exists():
            fail(f"Path {str(path)!r} does not exist.", kind=Kind.LOCAL_FILE_MISSING)
    secrets = local_secrets(secret)
    call = requests.host_preflight(
        host=host,
        gpus=gpus,
        python=python,
        workdir=workdir,
        requires=requires or None,
        inputs=[str(path.resolve()) for path in others] or None,
        config=str(config.resolve()) if config is not None else None,
        code=str(code.resolve()) if code is not None else None,
        include=list(include) or None,
        follow_links=follow_links or None,
        hf_models=list(hf_model) or None,
        secrets=secrets or None,
        requirements=str(requirements.resolve()) if requirements is not None else None,
        image=image,
        progress_token="environment" if requirements is not None else None,
    )
    line = StatusLine(None if not json else False)
    with DaemonClient.connect() as client:
        try:
            verdict = client.call(call, on_notification=lambda _m, p: line.update(p))
        finally:
            line.clear()
    if json:
        print_json(verdict)
    else:
        print(_verdict_line(host, verdict))
        for finding in verdict.findings:
            print(f"  {_FINDING_MARKS.get(finding.level, '')}{finding.topic}: {finding.text}")
        # An older daemon sends reasons without findings.
        if not verdict.findings:
            for reason in verdict.reasons:
                print(f"  {reason}")
    if not verdict.ok:
        raise typer.Exit(1)


def _requirements(require: list[str], require_file: list[Path], hf_model: list[str]) -> list[str]:
    """The packages asked for, with those of the requirements files; exits with one
    sentence on the first that is not a requirement (or model name) pip's rules read."""
    requires = list(require)
    if require_file:
        from .requirements_file import RequirementsFileError, read_requirements

        try:
            for path in require_file:
                requires += read_requirements(path)
        except RequirementsFileError as error:
            fail(str(error), kind=Kind.INVALID_REQUIREMENT)
    try:
        for text in requires:
            validation.requirement(text)
        for model in hf_model:
            validation.hf_model(model)
    except RpcError as error:
        fail(error.message, kind=error.kind or ClientKind.USAGE)
    return requires


def _verdict_line(host: str, verdict: Any) -> str:
    """`HOST is ready to train.`, or `✗ HOST cannot train`. A ready host whose python lacks
    torch says so here too: a trainer that imports torch fails at its first line."""
    if not verdict.ok:
        return f"✗ {host} cannot train"
    caveats = [f.text for f in verdict.findings if f.topic == "torch" and f.level == "warning"]
    if caveats:
        return f"{host} is ready to train, but {'; '.join(caveats)}."
    return f"{host} is ready to train."
