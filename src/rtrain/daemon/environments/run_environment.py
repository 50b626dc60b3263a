"""How a start runs in its environment: the builder (`rtrain-env`, daemon/remote/env_build.py)
and the lock are shipped into the run dir with rtrain's own files, and the builder is one more
wrapper word after the GPU gate, so the build runs detached on the host as the run's first
step: a start never holds the terminal while it builds, and `tail`/`status` show how far it
got. `{python}` is the run dir's link to the environment."""

from __future__ import annotations

from importlib import resources

from rtrain.daemon.remote import env_build

from .lock_file import EnvironmentLock

BUILDER_FILE = "rtrain-env"
LOCK_FILE = "rtrain-requirements.txt"
UV_LOCK_FILE = f"rtrain-{env_build.UV_LOCK_SUFFIX}"
PYPROJECT_FILE = env_build.PYPROJECT
LINK = env_build.LINK
FAILED_FILE = env_build.FAILED
# Names the run dir keeps for the environment (a dataset or a code file may not take them).
RESERVED = (
    BUILDER_FILE,
    LOCK_FILE,
    UV_LOCK_FILE,
    PYPROJECT_FILE,
    LINK,
    FAILED_FILE,
    f"{FAILED_FILE}.tmp",
    "queued.env",
)
# Finds the host python the way launch.sh finds the trainer's program (`~/` is the far
# user's home), then runs the builder with it.
_WITH_PYTHON = 'p=$1; shift; case $p in "~/"*) p=$HOME/${p#"~/"} ;; esac; exec "$p" "$@"'


def environment_python(run_dir: str) -> str:
    """What `{python}` becomes in a run with an environment."""
    return f"{run_dir}/{LINK}/bin/python"


def lock_file(lock: EnvironmentLock) -> str:
    """The lock's name in the run dir, which tells the builder what kind of lock it is."""
    return LOCK_FILE if lock.pyproject is None else UV_LOCK_FILE


def builder_words(python: str, run_dir: str, lock: EnvironmentLock) -> list[str]:
    """The wrapper words that build (or find) the environment, then exec the rest."""
    workdir = run_dir.rsplit("/", 1)[0]
    name = lock_file(lock)
    return ["/bin/sh", "-c", _WITH_PYTHON, BUILDER_FILE, python, BUILDER_FILE, workdir, name]


def builder_source() -> bytes:
    return resources.files("rtrain.daemon.remote").joinpath("env_build.py").read_bytes()


def environment_files(lock: EnvironmentLock) -> list[tuple[str, bytes]]:
    files = [(BUILDER_FILE, builder_source()), (lock_file(lock), lock.content)]
    if lock.pyproject is not None:
        files.append((PYPROJECT_FILE, lock.pyproject))
    return files
