# The Python half of list_files.sh for a directory: with python3 on the host, one interpreter
# walks the tree (and hashes its files when asked) instead of a shell loop over every entry,
# twice. Run as `python3 -c PROGRAM TARGET REL REAL_RUN HASHES RUN_MARK E_BAD_NAME E_OUTSIDE`;
# it prints what list_files.sh prints (see there), and nothing before the whole tree was
# checked. The daemon sends it inside that script as one single-quoted sh word, so it holds
# no single quote. Python 3 and its standard library only.
from __future__ import annotations

import hashlib
import os
import stat
import sys

CHUNK = 1 << 20
E_UNREADABLE = 14


class Walk:
    def __init__(self, real_run: str, run_mark: str, bad_name: int, outside: int) -> None:
        self.real_run = real_run
        self.run_mark = run_mark
        self.bad_name = bad_name
        self.outside = outside
        self.found: list[tuple[str, str, str]] = []  # (f, REL, PATH) or (d, REL, -)

    def fail(self, code: int, *fields: str) -> None:
        sys.stdout.write("\t".join(["error", *fields]) + "\n")
        sys.stdout.flush()
        sys.exit(code)

    def inside(self, path: str) -> bool:
        """Whether the real path of `path` is in the run (a dangling link too: where it
        would lead counts, so none to outside is ever listed)."""
        real = os.path.realpath(path)
        return real == self.real_run or real.startswith(self.real_run + "/")

    def walk(self, folder: str, rel: str) -> bool:
        """Lists what is below `folder`; whether anything was."""
        listed = False
        try:
            names = os.listdir(folder)
        except OSError:
            return False
        # The order of the shell: names, then dot names, each sorted.
        names.sort(key=lambda name: (name.startswith("."), name))
        for name in names:
            path = os.path.join(folder, name)
            entry_rel = f"{rel}/{name}" if rel else name
            if entry_rel == self.run_mark:
                continue
            if "\t" in name or "\n" in name:
                self.fail(
                    self.bad_name, "bad_name", entry_rel.replace("\t", " ").replace("\n", " ")
                )
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                if not self.inside(path):
                    self.fail(self.outside, "path_outside_run", entry_rel)
                if os.path.isdir(path):
                    sys.stderr.write(f"not following the directory link {entry_rel}\n")
                    continue
            if os.path.isdir(path):
                if not self.walk(path, entry_rel):
                    self.found.append(("d", entry_rel, "-"))
                listed = True
            elif os.path.isfile(path):
                self.found.append(("f", entry_rel, path))
                listed = True
            else:
                sys.stderr.write(f"skipping {entry_rel}: not a regular file\n")
        return listed


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        block = f.read(CHUNK)
        while block:
            digest.update(block)
            block = f.read(CHUNK)
    return digest.hexdigest()


def main(argv: list[str]) -> None:
    target, rel, real_run, hashes, run_mark = argv[1:6]
    walk = Walk(real_run, run_mark, int(argv[6]), int(argv[7]))
    if not walk.walk(target, rel):
        walk.found.append(("d", rel or ".", "-"))
    lines = []
    for kind, entry_rel, path in walk.found:
        if kind == "d":
            lines.append(f"dir\t{entry_rel}\n")
            continue
        try:
            size = os.stat(path).st_size
            sha = sha256_of(path) if hashes == "sha256" else "-"
        except OSError:
            walk.fail(E_UNREADABLE, "unreadable", entry_rel)
        lines.append(f"file\t{size}\t{sha}\t{entry_rel}\n")
    sys.stdout.write("".join(lines))


if __name__ == "__main__":
    main(sys.argv)
