"""The files of a code directory that a start ships, what its rules leave home, and why.

- Ignore rules: the directory's `.rtrainignore` alone, else its `.gitignore` files (gitignore
  syntax; as git reads them, a deeper one's rule wins over a higher one's). `include`
  patterns (gitignore syntax too) ship what they match even where the ignore rules leave it
  home, inside an ignored directory too. `.git/` never ships.
- Links: a link to a file inside the directory ships that file; a link to a directory inside
  it ships as a link (following it could loop). A link that leaves the directory, or points
  nowhere, ships as a link with its target unchanged, never what it points to, unless
  `follow_links`: then its file ships, or its directory is walked (each real one once).
- Secrets: a shipped file whose name looks like a secret (`.env`, `*.pem`, an ssh key...)
  and that no ignore or include rule names is listed, for the start to warn about.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rtrain.protocol.errors import Kind, app_error

from .local_file import LocalFile, check_name, local, unreadable

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

# Ignore rules of a code directory, the first that exists wins (gitignore syntax).
IGNORE_FILES = (".rtrainignore", ".gitignore")
# Never shipped from a code directory, whatever the rules say.
NEVER_SHIPPED = ".git"
# An ignored directory is counted (for the summary) up to this many entries; a bigger one
# (a dataset of a million images) is said to hold "at least" that much.
COUNT_AT_MOST = 10_000

SECRET_NAMES = frozenset({".env", ".netrc", ".pgpass", "credentials", "credentials.json"})
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx")
# `.env.local` holds secrets; `.env.example` and its kind are templates people commit.
TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist")


def looks_secret(name: str) -> bool:
    """Whether a file called `name` is likely to hold a secret."""
    if name in SECRET_NAMES or name.endswith(SECRET_SUFFIXES):
        return True
    if name.startswith(".env.") and not name.endswith(TEMPLATE_SUFFIXES):
        return True
    # ssh private keys (id_rsa, id_ed25519); their `.pub` halves are public.
    return name.startswith("id_") and "." not in name


@dataclass
class LeftHome:
    """A path the ignore rules kept home (a directory's ends in '/'): the rule, as written
    in the ignore file, and the files and bytes under it (`more`: counted in part)."""

    path: str
    rule: str
    files: int = 0
    size: int = 0
    more: bool = False


@dataclass(frozen=True)
class Link:
    """A symbolic link shipped as a link; `outside`: its target is not in the directory."""

    path: str
    target: str
    outside: bool


@dataclass
class CodeTree:
    # The ignore file read (`.rtrainignore`, `.gitignore`), None without one.
    rules: str | None = None
    files: list[LocalFile] = field(default_factory=list)
    # Directories to make in the run dir, parents first.
    dirs: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    left_home: list[LeftHome] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


# (name, local path, is a directory) -> ship this top-level entry? It may raise a refusal.
TopFilter = Callable[[str, Path, bool], bool]


def walk_code(
    root: Path, *, include: list[str], follow_links: bool, keep_top: TopFilter
) -> CodeTree:
    """What `root` ships and what it leaves home, or the sentence saying why it cannot ship."""
    rules, ignore = ignore_spec(root)
    nested = rules != IGNORE_FILES[0]
    walker = _Walk(root, ignore, include, follow_links, keep_top, nested_rules=nested)
    tree = walker.run()
    tree.rules = rules
    # A pattern that names nothing is a typo the run would find later, as a missing file.
    for pattern in include:
        if pattern not in walker.matched:
            raise app_error(
                Kind.INVALID_PATH,
                f"--include {pattern!r} matches nothing in the code directory {str(root)!r}; "
                "patterns are gitignore's, relative to it (e.g. 'data/*.bin').",
            )
    return tree


def ignore_spec(root: Path) -> tuple[str | None, GitIgnoreSpec | None]:
    """The ignore file that applies, and its rules."""
    import pathspec

    for name in IGNORE_FILES:
        rules = root / name
        if rules.is_file():
            try:
                lines = rules.read_text(errors="replace").splitlines()
            except OSError as error:
                raise unreadable(rules, error) from None
            return name, pathspec.GitIgnoreSpec.from_lines(lines)
    return None, None


def include_spec(patterns: list[str]) -> GitIgnoreSpec | None:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns) if patterns else None


class _Walk:
    def __init__(
        self,
        root: Path,
        ignore: GitIgnoreSpec | None,
        patterns: list[str],
        follow: bool,
        keep_top: TopFilter,
        *,
        nested_rules: bool,
    ) -> None:
        include = include_spec(patterns)
        # A directory's own .gitignore, by its path, as git reads them (not with an
        # .rtrainignore, which alone says what stays home).
        self.nested_rules = nested_rules
        self.nested: dict[str, GitIgnoreSpec] = {}
        self.root = root
        self.real_root = os.path.realpath(root)
        self.ignore = ignore
        self.include = include
        # Each include pattern alone, to tell the ones that matched nothing.
        self.patterns = {text: alone for text in patterns if (alone := include_spec([text]))}
        self.matched: set[str] = set()
        self.follow = follow
        self.keep_top = keep_top
        self.tree = CodeTree()
        self.made: set[str] = set()
        # Real directories walked, so that a followed link never loops.
        self.walked = {self.real_root}

    def run(self) -> CodeTree:
        self.folder(self.root, "", None)
        return self.tree

    # -- rules ------------------------------------------------------------------------------

    def decision(self, rel: str, is_dir: bool) -> tuple[bool, str] | None:
        """(ignored, the rule as written) from the deepest ignore file with a rule for
        `rel`, as git decides; None when no rule names it."""
        # gitignore tells a directory by its trailing slash (`build/` matches directories).
        path = rel + "/" if is_dir else rel
        base = rel.rpartition("/")[0]
        while base:
            spec = self.nested.get(base)
            if spec is not None:
                found = spec.check_file(path[len(base) + 1 :])
                if found.index is not None:
                    written = getattr(spec.patterns[found.index], "pattern", "")
                    return bool(found.include), f"{base}/{IGNORE_FILES[1]}: {written}"
            base = base.rpartition("/")[0]
        if self.ignore is None:
            return None
        found = self.ignore.check_file(path)
        if found.index is None:
            return None
        return bool(found.include), str(getattr(self.ignore.patterns[found.index], "pattern", ""))

    def rule(self, rel: str, is_dir: bool) -> str | None:
        """The ignore rule that leaves `rel` home, as written; None when none does."""
        decided = self.decision(rel, is_dir)
        return decided[1] if decided is not None and decided[0] else None

    def named(self, rel: str) -> bool:
        """An ignore or include rule names `rel` (either way): the user has decided on it."""
        if self.include is not None and self.include.match_file(rel):
            return True
        return self.decision(rel, False) is not None

    def included(self, rel: str, is_dir: bool) -> bool:
        if self.include is None:
            return False
        path = rel + "/" if is_dir else rel
        if not self.include.match_file(path):
            return False
        for pattern, alone in self.patterns.items():
            if pattern not in self.matched and alone.match_file(path):
                self.matched.add(pattern)
        return True

    def read_nested(self, path: Path, rel: str) -> None:
        import pathspec

        rules = path / IGNORE_FILES[1]
        if rules.is_file() and not rules.is_symlink():
            try:
                lines = rules.read_text(errors="replace").splitlines()
            except OSError as error:
                raise unreadable(rules, error) from None
            self.nested[rel] = pathspec.GitIgnoreSpec.from_lines(lines)

    def could_include_under(self, rel: str) -> bool:
        """Whether an include pattern may match below the directory `rel`: one that is not
        anchored (`*.bin`) may match anywhere; an anchored one (`data/*/train.bin`) only
        below the directories its literal start names. Spares a walk of a big ignored
        directory (a venv, a million images) that no pattern reaches."""
        folder = rel + "/"
        for pattern in self.patterns:
            text = pattern.lstrip("/") if pattern.startswith("/") else pattern
            if "/" not in text.rstrip("/") and not pattern.startswith("/"):
                return True
            literal = re.split(r"[*?\[\\]", text, maxsplit=1)[0]
            if literal.startswith(folder) or folder.startswith(literal):
                return True
        return False

    # -- the walk ---------------------------------------------------------------------------

    def folder(self, path: Path, rel: str, home: LeftHome | None) -> None:
        """Walk `path` (landing at `rel`); under `home`, an ignored directory, only what an
        include pattern names ships, and the rest is counted into `home`."""
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError as error:
            raise unreadable(path, error) from None
        if rel and self.nested_rules:
            self.read_nested(path, rel)
        for entry in entries:
            name = entry.name
            if name == NEVER_SHIPPED:
                continue
            sub = f"{rel}/{name}" if rel else name
            self.entry(Path(entry.path), sub, entry, home, top=not rel)

    def entry(
        self, path: Path, rel: str, entry: os.DirEntry[str], home: LeftHome | None, *, top: bool
    ) -> None:
        link = entry.is_symlink()
        is_dir = entry.is_dir(follow_symlinks=link and self.follow_target(path))
        if not link and not is_dir and not entry.is_file(follow_symlinks=False):
            return  # a socket, a fifo, a device: nothing a trainer reads as a file
        included = self.included(rel, is_dir)
        rule = None if home is not None else self.rule(rel, is_dir)
        if (home is not None or rule is not None) and not included:
            self.leave_home(path, rel, is_dir, home, rule or "")
            return
        if top and not self.keep_top(rel, path, is_dir):
            return
        if link and not self.follow_target(path):
            self.add_link(path, rel)
        elif is_dir:
            real = os.path.realpath(path)
            if link and real in self.walked:
                self.add_link(path, rel)  # walked already: the link keeps the shape, no copy
                return
            self.walked.add(real)
            self.make_dir(rel)
            self.folder(path, rel, None)
        else:
            self.ship_file(path, rel)

    def follow_target(self, path: Path) -> bool:
        """Whether the link at `path` is followed: to a file inside the directory, or to
        anything outside that exists when the user asked to follow links. A link to a
        directory inside stays a link either way: its target ships on its own."""
        if not os.path.exists(path):
            return False
        if self.inside(os.path.realpath(path)):
            return not os.path.isdir(path)
        return self.follow

    def inside(self, real: str) -> bool:
        return real == self.real_root or real.startswith(self.real_root.rstrip(os.sep) + os.sep)

    def ship_file(self, path: Path, rel: str) -> None:
        parent = rel.rpartition("/")[0]
        if parent:
            self.make_dir(parent)
        self.tree.files.append(local(path, rel))
        if looks_secret(rel.rpartition("/")[2]) and not self.named(rel):
            self.tree.secrets.append(rel)

    def make_dir(self, rel: str) -> None:
        if rel in self.made:
            return
        parent = rel.rpartition("/")[0]
        if parent:
            self.make_dir(parent)
        check_name(rel)
        self.made.add(rel)
        self.tree.dirs.append(rel)

    def add_link(self, path: Path, rel: str) -> None:
        try:
            target = os.readlink(path)
        except OSError as error:
            raise unreadable(path, error) from None
        real = os.path.realpath(path)
        outside = not (os.path.exists(path) and self.inside(real))
        if not outside:
            # Written relative, so that it points at the same entry in the run directory.
            here = os.path.realpath(path.parent)
            target = os.path.relpath(real, here).replace(os.sep, "/")
        check_name(rel)
        check_name(target)
        parent = rel.rpartition("/")[0]
        if parent:
            self.make_dir(parent)
        self.tree.links.append(Link(rel, target, outside))

    def leave_home(
        self, path: Path, rel: str, is_dir: bool, home: LeftHome | None, rule: str
    ) -> None:
        if home is None:
            home = LeftHome(rel + "/" if is_dir else rel, rule)
            self.tree.left_home.append(home)
        if not is_dir:
            home.files += 1
            home.size += _size_of(path)
        elif self.could_include_under(rel):
            # An include pattern may name something inside: look at all of it.
            real = os.path.realpath(path)
            if real not in self.walked:
                self.walked.add(real)
                self.folder(path, rel, home)
        else:
            _count(path, home)


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # a dangling link, or unreadable: it stays home either way


def _count(top: Path, home: LeftHome) -> None:
    """Add the files and bytes under `top` (links not followed) to `home`, up to a bound."""
    seen = 0
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in names:
            seen += 1
            if seen > COUNT_AT_MOST:
                home.more = True
                return
            home.files += 1
            try:
                home.size += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
