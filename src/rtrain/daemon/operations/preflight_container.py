"""Preflight's part of containers (`--image`): the host's runtime, whether the image is in its
local store, and how many GPUs the image sees through it (docs/containers.md)."""

from __future__ import annotations

from rtrain.daemon.remote.contract.container_scripts import check_container
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.messages import Finding


async def judge_container(
    transport: Transport, host: str, runtime: str, image: str, gpus: int
) -> tuple[list[Finding], list[str]]:
    """The findings, and the problems (each one sentence)."""
    checked = await check_container(transport, runtime, image, gpus)
    if not checked.ok:
        return [], [f"the container check failed on {host}: {checked.error_text}"]
    if checked.runtime is None:
        wanted = "neither podman nor docker" if runtime == "auto" else f"no {runtime}"
        return [], [f"{host} has {wanted} on PATH, so --image {image} cannot run there."]
    found = [Finding("container", f"{checked.runtime}: {checked.version}".rstrip(": "))]
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
