"""Which lock a start builds its environment from, read and judged on this machine before any
SSH: the start's `requirements`, else the host's config.toml `requirements`, else the code
directory's own (`uv.lock` with `pyproject.toml`, else `requirements.txt`, at its top, where
they ship), on a host that runs its own runs (a batch job's host, or a run across hosts, would
refuse it). A lock is a pip requirements file, or a uv project's `uv.lock` (named as such)
with the `pyproject.toml` beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rtrain.daemon.operations.local_file import LocalFile
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.requirement_lines import logical_lines

CODE_REQUIREMENTS = "requirements.txt"
UV_LOCK = "uv.lock"
PYPROJECT = "pyproject.toml"
# Options that name other files or the user's own project: a cached environment holds only
# what the lock says, so these are refused with what to do instead.
_OTHER_FILES = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE = ("-e", "--editable")
_LARGEST = 1024 * 1024


@dataclass(frozen=True)
class EnvironmentLock:
    """The lock's bytes as shipped, and where they came from (for sentences); a uv project's
    lock carries its pyproject.toml too."""

    source: str
    content: bytes
    pyproject: bytes | None = None

    @property
    def identity(self) -> bytes:
        """What the far builder's key hashes (env_build.identity_of), as a far check of
        whether it is built asks with it."""
        from rtrain.daemon.remote.env_build import identity_of

        return identity_of(self.content, self.pyproject)


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
    """The code directory's uv.lock (with its pyproject.toml), else its requirements.txt,
    where its ignore rules let them ship."""
    shipped = {f.rel: f.source for f in files if isinstance(f.source, Path)}
    uv_lock, pyproject = shipped.get(UV_LOCK), shipped.get(PYPROJECT)
    if isinstance(uv_lock, Path) and isinstance(pyproject, Path):
        return read_lock(uv_lock, "the code's uv.lock")
    requirements = shipped.get(CODE_REQUIREMENTS)
    if isinstance(requirements, Path):
        return read_lock(requirements, "the code's requirements.txt")
    return None


def read_lock(path: Path, given_as: str) -> EnvironmentLock:
    content = _read(path, given_as)
    if path.name == UV_LOCK:
        return _uv_project(path, content, given_as)
    try:
        text = content.decode()
    except UnicodeDecodeError:
        raise _refused(f"{given_as} {path}: not UTF-8 text; is it a requirements file?") from None
    check_lines(text, f"{given_as} {path}")
    return EnvironmentLock(str(path), content)


def _uv_project(path: Path, content: bytes, given_as: str) -> EnvironmentLock:
    """A uv.lock, and the pyproject.toml beside it, each TOML that says what it is."""
    pyproject_path = path.with_name(PYPROJECT)
    pyproject = _read(pyproject_path, f"the pyproject.toml beside {given_as}")
    lock = _toml(content, f"{given_as} {path}")
    if not isinstance(lock.get("version"), int) or not isinstance(lock.get("package", []), list):
        raise _refused(f"{given_as} {path}: not a uv lock (no `version`); run `uv lock`.")
    project = _toml(pyproject, f"{pyproject_path}")
    if not isinstance(project.get("project"), dict):
        raise _refused(f"{pyproject_path}: it has no [project] table, which uv.lock locks.")
    return EnvironmentLock(str(path), content, pyproject=pyproject)


def _toml(content: bytes, where: str) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(content.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise _refused(f"{where}: not TOML ({error}).") from None


def _read(path: Path, given_as: str) -> bytes:
    try:
        if path.stat().st_size > _LARGEST:
            raise _refused(f"{given_as} {path}: larger than 1 MiB; is it a requirements file?")
        return path.read_bytes()
    except FileNotFoundError:
        raise app_error(
            Kind.LOCAL_FILE_MISSING, f"{given_as} {str(path)!r} does not exist."
        ) from None
    except OSError as error:
        raise app_error(
            Kind.LOCAL_FILE_MISSING,
            f"{given_as} {str(path)!r} cannot be read: {error.strerror or error}.",
        ) from None


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
