"""shellcheck over the far-side scripts as the daemon sends them: each operation's script
after exactly the libraries it declares (rtrain.daemon.remote.script_libraries), as POSIX sh.
A finding is printed at its line in the file it came from, as `gcc` format does; a finding
in a library counts only when every script sent with that library reports it (a library's
name or function one script leaves unused another uses)."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

# This checkout's package, whichever rtrain the environment has installed.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from rtrain.daemon.remote.script_libraries import script_parts  # noqa: E402

DAEMON = Path("src/rtrain/daemon")


def operations() -> list[str]:
    own = sorted((DAEMON / "remote" / "scripts").glob("*.sh"))
    launchers = sorted(DAEMON.glob("launchers/*/scripts/*.sh"))
    return [p.stem for p in own] + [f"launchers.{p.parent.parent.name}:{p.stem}" for p in launchers]


def findings(operation: str) -> tuple[list[str], list[str]]:
    """(the files sent for OPERATION, shellcheck's findings at their own files' lines)."""
    files = [os.path.relpath(str(part)) for part in script_parts(operation)]
    texts = [Path(file).read_text() for file in files]
    starts, line = [], 1
    for text in texts:
        starts.append(line)
        # "\n".join puts one line break after each text: a blank line after one that ends
        # with its own.
        line += text.count("\n") + 1
    run = subprocess.run(
        ["shellcheck", "--shell=sh", "--format=gcc", "-"],
        input="\n".join(texts),
        capture_output=True,
        text=True,
        check=False,
    )
    found = []
    for row in run.stdout.splitlines():
        _, at, rest = row.split(":", 2)
        index = max(i for i, start in enumerate(starts) if start <= int(at))
        found.append(f"{files[index]}:{int(at) - starts[index] + 1}:{rest}")
    return files, found


def main() -> int:
    os.chdir(ROOT)  # findings name files relative to the checkout
    sent_with: collections.Counter[str] = collections.Counter()
    reported: collections.Counter[str] = collections.Counter()
    for operation in operations():
        files, found = findings(operation)
        sent_with.update(files)
        reported.update(set(found))
    shown = sorted(
        row for row, count in reported.items() if count == sent_with[row.split(":", 1)[0]]
    )
    print("\n".join(shown), end="\n" if shown else "")
    return 1 if shown else 0


if __name__ == "__main__":
    sys.exit(main())
