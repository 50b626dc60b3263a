"""Preflight's part of containers (`--image`): the host's runtime, whether the image is in its
local store, and how many GPUs the image sees through it (docs/containers.md)."""

from __future__ import annotations

from rtrain.daemon.remote.contract.container_scripts import check_container
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.messages import Finding

# Runtimes whose image is a file on the host, not an entry of a local store.
_FILE_IMAGES = ("apptainer", "singularity")


async def judge_container(
    transport: Transport, host: str, runtime: str, image: str, gpus: int
) -> tuple[list[Finding], list[str]]:
    """The findings, and the problems (each one sentence)."""
    checked = await check_container(transport, runtime, image, gpus)
    if not checked.ok:
        return [], [f"the container check failed on {host}: {checked.error_text}"]
    if checked.runtime is None:
        wanted = (
            "no podman, docker, apptainer or singularity" if runtime == "auto" else f"no {runtime}"
        )
        return [], [f"{host} has {wanted} on PATH, so --image {image} cannot run there."]
    found = [Finding("container", f"{checked.runtime}: {checked.version}".rstrip(": "))]
    if checked.image_remote:
        said = f"the image {image} is pulled by {checked.runtime} when a run starts"
        return [*found, Finding("container", said)], []
    if not checked.image_present and checked.runtime in _FILE_IMAGES:
        return found, [
            f"the image {image} is not on {host}: {checked.runtime} runs a .sif file or a "
            f"sandbox directory there (build or copy it first: {checked.runtime} build ...), or "
            "a URI such as docker://NAME."
        ]
    if not checked.image_present:
        return found, [
            f"the image {image} is not in {checked.runtime}'s local store on {host}; "
            f"pull or load it there first ({checked.runtime} pull {image})."
        ]
    found.append(Finding("container", f"the image {image} is there"))
    if checked.gpus_unseen is not None:
        return found, [
            f"the image {image} sees no GPU through {checked.runtime}: {checked.gpus_unseen}"
        ]
    if checked.gpus_seen is not None:
        found.append(Finding("container", f"the image sees {checked.gpus_seen} GPUs"))
    return found, []
