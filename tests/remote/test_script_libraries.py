"""Each far-side script names the libraries it needs (`# rtrain-needs:`), and only those
travel before it: the declarations must be complete (every library function a script calls,
every library variable it reads, is in what it is sent) and minimal (nothing declared that
it does not use). shellcheck does not report an undefined function, so this test does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import rtrain.daemon
from rtrain.daemon.remote import script
from rtrain.daemon.remote.script_libraries import CORE, declared_needs, script_parts

DAEMON = Path(rtrain.daemon.__file__).parent
LIB = DAEMON / "remote" / "scripts" / "lib"
SCRIPTS = sorted(
    [*(DAEMON / "remote" / "scripts").glob("*.sh"), *DAEMON.glob("launchers/*/scripts/*.sh")]
)
_DEFINES = re.compile(r"^([a-z_][a-z0-9_]*)\(\) \{$", re.MULTILINE)
# Top-level assignments, several on one line too (`A='' B=''`).
_ASSIGNS = re.compile(r"(?:^|[ ;])([A-Z][A-Z0-9_]*)=", re.MULTILINE)
_WORD = re.compile(r"\b[a-z_][a-z0-9_]*\b")
_READS = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")


def _code(text: str) -> str:
    """TEXT without its comments (whole-line ones and ` # ...` after code)."""
    lines = (line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return "\n".join(re.sub(r"\s#\s.*$", "", line) for line in lines)


@dataclass(frozen=True)
class Library:
    name: str
    functions: frozenset[str]
    variables: frozenset[str]


def _library(path: Path) -> Library:
    top_level = "\n".join(line for line in path.read_text().splitlines() if line[:1] != "\t")
    return Library(
        path.stem,
        frozenset(_DEFINES.findall(path.read_text())),
        frozenset(_ASSIGNS.findall(_code(top_level))),
    )


LIBRARIES = {path.stem: _library(path) for path in sorted(LIB.glob("*.sh"))}


def _used_libraries(text: str) -> set[str]:
    """The libraries other than core whose functions TEXT calls or whose variables it reads
    (a name TEXT defines itself does not count)."""
    code = _code(text)
    own = set(_DEFINES.findall(text)) | set(_ASSIGNS.findall(code))
    words = set(_WORD.findall(code)) - own
    reads = set(_READS.findall(code)) - own
    return {
        lib.name
        for lib in LIBRARIES.values()
        if lib.name != CORE and (lib.functions & words or lib.variables & reads)
    }


def _operation(path: Path) -> str:
    """The name `script()` takes for the script at PATH."""
    if "launchers" in path.parts:
        return f"launchers.{path.parent.parent.name}:{path.stem}"
    return path.stem


def test_the_libraries_define_each_name_once() -> None:
    seen: dict[str, str] = {}
    for lib in LIBRARIES.values():
        for name in lib.functions | lib.variables:
            assert name not in seen, f"{name} is defined in {seen[name]}.sh and {lib.name}.sh"
            seen[name] = lib.name
    assert CORE in LIBRARIES
    assert not (DAEMON / "remote" / "scripts" / "common.sh").exists()


@pytest.mark.parametrize("path", [*SCRIPTS, *sorted(LIB.glob("*.sh"))], ids=lambda p: p.stem)
def test_a_script_declares_exactly_the_libraries_it_uses(path: Path) -> None:
    text = path.read_text()
    declared = declared_needs(text)
    assert len(declared) == len(set(declared)), f"{path.name} names a library twice"
    assert set(declared) <= set(LIBRARIES), f"{path.name} names no library of lib/"
    assert CORE not in declared, "core.sh goes before every script without being named"
    assert set(declared) == _used_libraries(text) - {path.stem}, (
        f"{path.name}: its `# rtrain-needs:` line must name the libraries it uses"
    )


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_what_is_sent_defines_every_library_function_the_script_calls(path: Path) -> None:
    name = _operation(path)
    parts = script_parts(name)
    sent = {Path(str(part)).stem for part in parts[:-1]}
    text = script(name)
    defined = set(_DEFINES.findall(text))
    called = set(_WORD.findall(_code(text))) & {
        function for lib in LIBRARIES.values() for function in lib.functions
    }
    assert called <= defined, f"{path.name} calls {sorted(called - defined)}, not sent"
    # Nothing more than it needs travels: every library sent is needed by the script or by
    # another library sent.
    needed = {CORE} | set(declared_needs(path.read_text()))
    for part in parts[:-1]:
        needed |= set(declared_needs(Path(str(part)).read_text()))
    assert sent == needed


def test_every_library_is_sent_for_some_script() -> None:
    used = {
        Path(str(part)).stem for path in SCRIPTS for part in script_parts(_operation(path))[:-1]
    }
    assert used == set(LIBRARIES)
