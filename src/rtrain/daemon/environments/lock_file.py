"""Which lock a start builds its environment from, read and judged on this machine before any
SSH: the start's `requirements`, else the host's config.toml `requirements`, else
`requirements.txt` at the top of the code directory, where it ships (its ignore rules let
it), on a host that runs its own runs (a batch job's host, or a run across hosts, would
refuse it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rtrain.daemon.operations.local_file import LocalFile
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.requirement_lines import logical_lines

CODE_REQUIREMENTS = "requirements.txt"
# Options that name other files or the user's own project: a cached environment holds only
# what the lock says, so these are refused with what to do instead.
_OTHER_FILES = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE = ("-e", "--editable")
_LARGEST = 1024 * 1024


@dataclass(frozen=True)
class EnvironmentLock:
    """The lock's bytes as shipped, and where they came from (for sentences)."""

    source: str
    content: bytes


def chosen_lock(requirements: str | None, host_requirements: str | None) -> EnvironmentLock | None:
    """The lock the start names, else the host's; the code's is `code_lock`'s, once the
    code directory has been walked."""
    if requirements == "":
        return None  # asked for none
    if requirements is not None:
        return read_lock(Path(requirements).expanduser(), "--requirements")
    if host_requirements is not None:
        return read_lock(Path(host_requirements).expanduser(), "config.toml requirements")
    return None


def code_lock(files: Sequence[LocalFile]) -> EnvironmentLock | None:
    """The code directory's requirements.txt, where its ignore rules let it ship."""
    for file in files:
        if file.rel == CODE_REQUIREMENTS and isinstance(file.source, Path):
            return read_lock(file.source, "the code's requirements.txt")
    return None


def read_lock(path: Path, given_as: str) -> EnvironmentLock:
    try:
        if path.stat().st_size > _LARGEST:
            raise _refused(f"{given_as} {path}: larger than 1 MiB; is it a requirements file?")
        content = path.read_bytes()
    except FileNotFoundError:
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"{given_as} {str(path)!r} does not exist."
        ) from None
    except OSError as error:
        raise app_error(
            Kind.LOCAL_FILE_MISSING,
            f"{given_as} {str(path)!r} cannot be read: {error.strerror or error}.",
        ) from None
    try:
        text = content.decode()
    except UnicodeDecodeError:
        raise _refused(f"{given_as} {path}: not UTF-8 text; is it a requirements file?") from None
    check_lines(text, f"{given_as} {path}")
    return EnvironmentLock(str(path), content)


def check_lines(text: str, where: str) -> None:
    """Each line a requirement pip understands, or an option about where to find them."""
    requirements = 0
    for number, line in logical_lines(text):
        word = line.split()[0].split("=", 1)[0]
        if word in _OTHER_FILES:
            raise _refused(
                f"{where} line {number}: {word} names another file; put its lines in this one "
                "(an environment is built from one file)."
            )
        if word in _EDITABLE or line.startswith((".", "/", "~")):
            raise _refused(
                f"{where} line {number}: {line!r} installs a local project; an environment "
                "is shared by runs, so install your own code in --setup (or run it from the "
                "run directory) and keep the lock to packages from an index."
            )
        if line.startswith("-"):
            continue  # where to find packages (--index-url, --find-links, ...): pip's to read
        try:
            validation.requirement(line)
        except RpcError as error:
            raise _refused(f"{where} line {number}: {error.message}") from None
        requirements += 1
    if not requirements:
        raise _refused(f"{where}: it names no requirement.")


def _refused(message: str) -> RpcError:
    return app_error(Kind.INVALID_REQUIREMENT, message)
