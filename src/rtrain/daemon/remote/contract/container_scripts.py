"""container_check.sh: preflight's look at the host's container runtime and an image
(docs/containers.md)."""

from __future__ import annotations

from .answers import Answer, Exit, Lines, Runner, as_int


class ContainerCheck(Answer, frozen=True, kw_only=True):
    """The runtime found (None: none of those asked for), its version line, whether the
    image is in its local store (None: not asked, or an Apptainer URI the run pulls:
    `image_remote`), and how many GPUs the image sees (None: not asked) or why it sees none."""

    runtime: str | None = None
    version: str = ""
    image_present: bool | None = None
    image_remote: bool = False
    gpus_seen: int | None = None
    gpus_unseen: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK


async def check_container(transport: Runner, runtime: str, image: str, gpus: int) -> ContainerCheck:
    done = await transport.run("container_check", [runtime, image, str(gpus)], timeout=300)
    lines = Lines(done.stdout)
    answer = ContainerCheck(exit=done.returncode, error_text=done.error_text)
    found = lines.last("runtime")
    if found is None or not found or found[0] == "none":
        return answer
    image_word = lines.value("image")
    seen = lines.last("gpus")
    return ContainerCheck(
        exit=done.returncode,
        error_text=done.error_text,
        runtime=found[0],
        version=found[1] if len(found) > 1 else "",
        image_present=None if image_word in (None, "remote") else image_word == "present",
        image_remote=image_word == "remote",
        gpus_seen=as_int(seen[0]) if seen and seen[0] != "unseen" else None,
        gpus_unseen=(seen[1] if len(seen) > 1 else "") if seen and seen[0] == "unseen" else None,
    )
