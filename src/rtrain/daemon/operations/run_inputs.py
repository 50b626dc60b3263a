"""What a start ships: the config, the datasets (files or directories) and a code directory,
gathered on this machine and checked for clashes before any ssh runs.

Each input lands in the run directory under one name: the config as `config.yaml`, a dataset
under its base name, the code directory's entries as they are (code_tree.py: its ignore
rules, links and secrets). Two inputs that would land on the same name are refused, unless
they are the very same local file (a config or a dataset that lives in the code directory),
which is then shipped once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rtrain.protocol.errors import Kind, app_error

from .code_tree import IGNORE_FILES, NEVER_SHIPPED, CodeTree, walk_code
from .local_file import LocalFile, check_name, local, unreadable

__all__ = ["IGNORE_FILES", "NEVER_SHIPPED", "Inputs", "LocalFile", "gather"]


@dataclass
class Inputs:
    files: list[LocalFile] = field(default_factory=list)
    # Directories to make in the run dir before the files land, parents first.
    dirs: list[str] = field(default_factory=list)
    # rtrain's own files (the demo trainer): shipped beside the user's, never counted as theirs.
    own: list[LocalFile] = field(default_factory=list)
    # What the code directory's rules left home, its links and its secret-looking files.
    code: CodeTree | None = None

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


@dataclass(frozen=True)
class InputSources:
    """What a start ships, as named on this machine. `include`: patterns (gitignore syntax)
    of the code directory shipped despite its ignore rules; `follow_links`: ship what the
    code's links that leave it point to."""

    config: Path | None
    config_name: str
    datasets: list[Path]
    code: Path | None
    extra: dict[str, bytes]
    reserved: set[str]
    include: list[str] | None = None
    follow_links: bool = False


def gather(sources: InputSources) -> Inputs:
    """Every file of every input, or the one sentence saying why the start cannot ship them."""
    config, config_name, datasets = sources.config, sources.config_name, sources.datasets
    code, extra, reserved = sources.code, sources.extra, sources.reserved
    include, follow_links = sources.include, sources.follow_links
    if include and code is None:
        raise app_error(
            Kind.INVALID_PATH,
            "--include names paths of the code directory; give --code DIR too.",
        )
    inputs = Inputs()
    landing = _Landing()
    if config is not None:
        landing.claim(config_name, "the config", config)
        inputs.files.append(LocalFile(config_name, config, _size(config)))
    for name, data in extra.items():
        landing.claim(name, "rtrain's demo trainer", None)
        inputs.own.append(LocalFile(name, data, len(data)))
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
            _add_tree(inputs, dataset, dataset.name)
        else:
            inputs.files.append(local(dataset, dataset.name))
    if code is not None:
        _add_code(inputs, code, landing, reserved, include or [], follow_links)
    return inputs


def _add_code(
    inputs: Inputs,
    root: Path,
    landing: _Landing,
    reserved: set[str],
    include: list[str],
    follow_links: bool,
) -> None:
    def keep_top(name: str, path: Path, _is_dir: bool) -> bool:
        if landing.same_file_there(name, path):
            return False  # the config or a dataset, already on its way
        if name in reserved:
            raise app_error(
                Kind.INVALID_PATH,
                f"the code directory holds {name!r}, a name rtrain uses in the run "
                f"directory; rename it or list it in {root / IGNORE_FILES[0]}.",
            )
        landing.claim(name, f"{name!r} of the code directory", path)
        return True

    tree = walk_code(root, include=include, follow_links=follow_links, keep_top=keep_top)
    inputs.dirs += tree.dirs
    inputs.files += tree.files
    inputs.code = tree


def _add_tree(inputs: Inputs, top: Path, rel_top: str) -> None:
    """Every file under `top` (a dataset directory), landing under `rel_top`; links to
    directories are not followed (a loop would never end), links to files ship the file."""
    inputs.dirs.append(rel_top)

    def failed(error: OSError) -> None:
        raise unreadable(Path(error.filename or top), error)

    for folder, subdirs, names in os.walk(top, onerror=failed):
        rel_folder = rel_top + folder[len(str(top)) :].replace(os.sep, "/")
        kept = []
        for sub in sorted(subdirs):
            rel = f"{rel_folder}/{sub}"
            if os.path.islink(os.path.join(folder, sub)):
                continue
            check_name(rel)
            kept.append(sub)
            inputs.dirs.append(rel)
        subdirs[:] = kept
        for name in sorted(names):
            path = Path(folder, name)
            if path.is_file():
                inputs.files.append(local(path, f"{rel_folder}/{name}"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as error:
        raise unreadable(path, error) from None


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False
