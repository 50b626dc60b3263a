"""What a start ships: the config, the datasets (files or directories) and a code directory,
gathered on this machine and checked for clashes before any ssh runs.

Each input lands in the run directory under one name: the config as `config.yaml`, a dataset
under its base name, the code directory's entries as they are. Two inputs that would land on
the same name are refused, unless they are the very same local file (a config or a dataset
that lives in the code directory), which is then shipped once.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rtrain.protocol.errors import Kind, RpcError, app_error

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

# Ignore rules of a code directory, the first that exists wins (gitignore syntax).
IGNORE_FILES = (".rtrainignore", ".gitignore")
# Never shipped from a code directory, whatever the rules say.
NEVER_SHIPPED = ".git"


@dataclass(frozen=True)
class LocalFile:
    """One file to ship: `rel` is where it lands in the run dir ('/'-separated)."""

    rel: str
    source: Path | bytes
    size: int
    executable: bool = False


@dataclass
class Inputs:
    files: list[LocalFile] = field(default_factory=list)
    # Directories to make in the run dir before the files land, parents first.
    dirs: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


class _Landing:
    """Which input has each top-level name of the run directory."""

    def __init__(self) -> None:
        # name -> what claims it (for the sentence) and its local path (to tell sameness).
        self.taken: dict[str, tuple[str, Path | None]] = {}

    def same_file_there(self, name: str, path: Path) -> bool:
        other = self.taken.get(name)
        return other is not None and other[1] is not None and _same(path, other[1])

    def claim(self, name: str, what: str, path: Path | None) -> bool:
        """True when `name` is now `what`'s; False when the same file already has it."""
        if path is not None and self.same_file_there(name, path):
            return False
        if name in self.taken:
            raise app_error(
                Kind.INVALID_PATH,
                f"{what} and {self.taken[name][0]} would both land at {name!r} in the run "
                "directory; rename one of them.",
            )
        self.taken[name] = (what, path)
        return True


def gather(
    *,
    config: Path | None,
    config_name: str,
    datasets: list[Path],
    code: Path | None,
    extra: dict[str, bytes],
    reserved: set[str],
) -> Inputs:
    """Every file of every input, or the one sentence saying why the start cannot ship them."""
    inputs = Inputs()
    landing = _Landing()
    if config is not None:
        landing.claim(config_name, "the config", config)
        inputs.files.append(LocalFile(config_name, config, _size(config)))
    for name, data in extra.items():
        landing.claim(name, "rtrain's demo trainer", None)
        inputs.files.append(LocalFile(name, data, len(data)))
    for dataset in datasets:
        if dataset.name in reserved:
            raise app_error(
                Kind.INVALID_PATH,
                f"the dataset may not be called {dataset.name!r}: "
                "rtrain uses that name in the run directory; rename it.",
            )
        if not landing.claim(dataset.name, f"the dataset {dataset.name!r}", dataset):
            continue
        if dataset.is_dir():
            _add_tree(inputs, dataset, dataset.name, ignore=None, code=False)
        else:
            inputs.files.append(_local(dataset, dataset.name))
    if code is not None:
        _add_code(inputs, code, landing, reserved)
    return inputs


def _add_code(inputs: Inputs, root: Path, landing: _Landing, reserved: set[str]) -> None:
    ignore = _ignore_spec(root)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as error:
        raise _unreadable(root, error) from None
    for entry in entries:
        name = entry.name
        is_dir = entry.is_dir(follow_symlinks=False)
        if name == NEVER_SHIPPED or _ignored(ignore, name, is_dir):
            continue
        path = Path(entry.path)
        if landing.same_file_there(name, path):
            continue  # the config or a dataset, already on its way
        if name in reserved:
            raise app_error(
                Kind.INVALID_PATH,
                f"the code directory holds {name!r}, a name rtrain uses in the run "
                f"directory; rename it or list it in {root / IGNORE_FILES[0]}.",
            )
        landing.claim(name, f"{name!r} of the code directory", path)
        if is_dir:
            _add_tree(inputs, path, name, ignore=ignore, code=True)
        elif entry.is_file():
            inputs.files.append(_local(path, name))


def _add_tree(
    inputs: Inputs, top: Path, rel_top: str, ignore: GitIgnoreSpec | None, *, code: bool
) -> None:
    """Every file under `top` (a directory), landing under `rel_top`; links to directories
    are not followed (a loop would never end), links to files ship the file."""
    inputs.dirs.append(rel_top)

    def failed(error: OSError) -> None:
        raise _unreadable(Path(error.filename or top), error)

    for folder, subdirs, names in os.walk(top, onerror=failed):
        rel_folder = rel_top + folder[len(str(top)) :].replace(os.sep, "/")
        kept = []
        for sub in sorted(subdirs):
            rel = f"{rel_folder}/{sub}"
            if sub == NEVER_SHIPPED and code:
                continue
            if os.path.islink(os.path.join(folder, sub)) or _ignored(ignore, rel, True):
                continue
            _check_name(rel)
            kept.append(sub)
            inputs.dirs.append(rel)
        subdirs[:] = kept
        for name in sorted(names):
            rel = f"{rel_folder}/{name}"
            path = Path(folder, name)
            if _ignored(ignore, rel, False) or not path.is_file():
                continue
            inputs.files.append(_local(path, rel))


def _ignore_spec(root: Path) -> GitIgnoreSpec | None:
    import pathspec

    for name in IGNORE_FILES:
        rules = root / name
        if rules.is_file():
            try:
                lines = rules.read_text(errors="replace").splitlines()
            except OSError as error:
                raise _unreadable(rules, error) from None
            return pathspec.GitIgnoreSpec.from_lines(lines)
    return None


def _ignored(spec: GitIgnoreSpec | None, rel: str, is_dir: bool) -> bool:
    # gitignore tells a directory by its trailing slash (`build/` matches directories only).
    return spec is not None and spec.match_file(rel + "/" if is_dir else rel)


def _local(path: Path, rel: str) -> LocalFile:
    _check_name(rel)
    try:
        info = path.stat()
    except OSError as error:
        raise _unreadable(path, error) from None
    return LocalFile(rel, path, info.st_size, bool(info.st_mode & stat.S_IXUSR))


def _check_name(rel: str) -> None:
    # Far-side scripts answer in tab-separated lines; a name holding a control character
    # would be cut there.
    if any(ord(c) < 32 or c == "\x7f" for c in rel):
        raise app_error(
            Kind.INVALID_PATH,
            f"cannot ship {rel!r}: its name holds a control character (a tab or a newline); "
            "rename it or ignore it.",
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as error:
        raise _unreadable(path, error) from None


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _unreadable(path: Path, error: OSError) -> RpcError:
    return app_error(
        Kind.LOCAL_FILE_MISSING,
        f"cannot read {str(path)!r}: {error.strerror or error}; nothing was shipped.",
    )
