"""How a start runs in a container: the wrapper (`rtrain-container`, container_run.sh) is
shipped into the run dir with rtrain's own files and is one more wrapper word after the GPU
gate, so the runtime client is the run's trainer process as far as the host sees it: stop,
the exit code and the log work as for any run. The container is named `rtrain-<run id>`;
the wrapper records which runtime it used in the run dir's `container` file, where stop.sh
finds it to remove the container."""

from __future__ import annotations

from importlib import resources

WRAPPER_FILE = "rtrain-container"
RUNTIME_FILE = "container"
# Names the run dir keeps for the container (a dataset or a code file may not take them).
RESERVED = (WRAPPER_FILE, RUNTIME_FILE, f"{RUNTIME_FILE}.tmp")
# What `{python}` is in a run with an image: the image's own interpreter, found on its PATH.
IMAGE_PYTHON = "python3"


def container_name(run_id: str) -> str:
    return f"rtrain-{run_id}"


def wrapper_words(runtime: str, image: str, run_id: str, names: list[str]) -> list[str]:
    """The words that run the rest of the command inside `image`; `names`: the variables
    (validated names) that pass into the container by name."""
    return ["/bin/sh", WRAPPER_FILE, runtime, image, run_id, ",".join(sorted(names))]


def wrapper_source() -> bytes:
    return resources.files("rtrain.daemon.containers").joinpath("container_run.sh").read_bytes()


def container_files() -> list[tuple[str, bytes]]:
    return [(WRAPPER_FILE, wrapper_source())]
