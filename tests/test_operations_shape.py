"""The daemon's operations stay readable: no function over 60 lines or 6 parameters, and no
operation that asks which launcher it has (a launcher owns what its backend does).

Checked on the installed package's source, so a new operation is held to it at once.
"""

from __future__ import annotations

import ast
from pathlib import Path

import rtrain.daemon.operations
import rtrain.daemon.preflight

OPERATIONS = Path(rtrain.daemon.operations.__file__).parent
# The preflight's judges were operations' modules: held to the same.
PREFLIGHT = Path(rtrain.daemon.preflight.__file__).parent
MOST_LINES = 60
MOST_PARAMETERS = 6  # self and cls not counted


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return [name for name in names if name not in ("self", "cls")]


def _files() -> list[Path]:
    files = sorted([*OPERATIONS.glob("*.py"), *PREFLIGHT.glob("*.py")])
    assert files, f"no operations found under {OPERATIONS}"
    return files


def test_no_operation_function_is_over_60_lines() -> None:
    long = [
        f"{path.name}:{f.lineno} {f.name} ({lines} lines)"
        for path in _files()
        for f in _functions(path)
        if (lines := (f.end_lineno or f.lineno) - f.lineno + 1) > MOST_LINES
    ]
    assert not long, "split these into well-named helpers:\n" + "\n".join(long)


def test_no_operation_function_takes_over_6_parameters() -> None:
    many = [
        f"{path.name}:{f.lineno} {f.name} ({len(params)} parameters)"
        for path in _files()
        for f in _functions(path)
        if len(params := _parameters(f)) > MOST_PARAMETERS
    ]
    assert not many, "group these parameters in a small frozen dataclass:\n" + "\n".join(many)


def test_no_operation_asks_which_launcher_it_has() -> None:
    asks = [
        f"{path.name}:{node.lineno}"
        for path in _files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and any("Launcher" in ast.unparse(arg) for arg in node.args[1:])
    ]
    assert not asks, "move these branches into a method of the launcher:\n" + "\n".join(asks)
