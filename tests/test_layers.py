"""The layers' import rules, checked on the installed package.

client -> protocol and daemon -> protocol only; protocol imports neither; the client never
imports the daemon at module level (start-up time), and `rtrain --version` /
`rtrain daemon status` load neither the daemon nor rich.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rtrain

PACKAGE = Path(rtrain.__file__).parent


def module_level_imports(path: Path) -> set[str]:
    """Absolute module names imported at the top level of a file (not inside functions)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def layer_files(layer: str) -> list[Path]:
    import importlib

    module = importlib.import_module(f"rtrain.{layer}")
    assert module.__file__ is not None
    return sorted(Path(module.__file__).parent.rglob("*.py"))


@pytest.mark.parametrize(
    "layer,forbidden",
    [
        ("protocol", ("rtrain.daemon", "rtrain.client")),
        ("client", ("rtrain.daemon",)),
        ("daemon", ("rtrain.client",)),
    ],
)
def test_a_layer_never_imports_a_forbidden_one_at_module_level(
    layer: str, forbidden: tuple[str, ...]
) -> None:
    offenders = []
    for path in layer_files(layer):
        for name in module_level_imports(path):
            if name.startswith(forbidden):
                offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_protocol_is_sans_io() -> None:
    io_modules = ("socket", "asyncio", "threading", "subprocess", "selectors")
    offenders = [
        f"{p.name}: {n}"
        for p in layer_files("protocol")
        for n in module_level_imports(p)
        if n.split(".")[0] in io_modules
    ]
    assert offenders == []


@pytest.mark.parametrize("argv", [["--version"], ["daemon", "status"]])
def test_light_commands_load_neither_the_daemon_nor_rich(argv: list[str], tmp_path: Path) -> None:
    probe = (
        "import sys, json\n"
        "from rtrain.client.entry import main\n"
        f"sys.argv = ['rtrain', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if m.startswith(('rtrain.daemon', 'rich'))]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
    )
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path),
        "RTRAIN_NO_SPAWN": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []


def test_the_committed_schema_is_generated_from_the_structs() -> None:
    from rtrain.protocol.schema import protocol_schema_json

    committed = Path(__file__).parent.parent / "docs" / "protocol.schema.json"
    assert committed.read_text() == protocol_schema_json(), (
        "docs/protocol.schema.json is stale: run `rtrain protocol schema > "
        "docs/protocol.schema.json`"
    )


def test_the_schema_describes_every_method_with_camel_case_fields() -> None:
    from rtrain.protocol.methods import METHODS
    from rtrain.protocol.schema import protocol_schema

    schema = protocol_schema()
    assert set(schema["methods"]) == set(METHODS)
    start = schema["$defs"]["StartParams"]["properties"]
    assert {"runId", "progressToken", "host", "config"} <= set(start)
    assert all(
        "_" not in name for d in schema["$defs"].values() for name in d.get("properties", {})
    )


@pytest.mark.parametrize(
    ("module", "source"), [("requests", "requests_module_source"), ("answer_defaults", None)]
)
def test_the_clients_generated_modules_are_what_the_structs_generate(
    module: str, source: str | None
) -> None:
    from rtrain.protocol import generate_client_code as generate

    text = getattr(generate, source)() if source else generate.answer_defaults_source()
    committed = PACKAGE / "protocol" / f"{module}.py"
    assert committed.read_text() == text, (
        f"protocol/{module}.py is stale: run `python -m rtrain.protocol.generate_client_code`"
    )


def test_a_misspelt_request_field_fails_before_anything_is_sent() -> None:
    from rtrain.protocol import requests

    with pytest.raises(TypeError, match="run_idd"):
        requests.run_status(host="h", run_idd="r")  # type: ignore[call-arg]
    assert requests.run_status(host="h", run_id="r").params == {"host": "h", "runId": "r"}


def test_the_python_api_does_not_import_cli_presentation_code() -> None:
    probe = (
        "import sys, json\n"
        "import rtrain.client.api\n"
        "print(json.dumps([m for m in sys.modules if m.startswith('rtrain.client.cli')]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout) == [], proc.stderr


def test_the_clients_warm_path_loads_no_msgspec_dataclasses_nor_typer() -> None:
    """What `rtrain status` and `tail` import to ask a running daemon: start-up is their cost."""
    probe = (
        "import sys, json\n"
        "import rtrain.client.fast_path, rtrain.client.daemon_client\n"
        "import rtrain.client.cli.status_view, rtrain.client.cli.log_follow\n"
        "heavy = ('msgspec', 'dataclasses', 'typer', 'rtrain.protocol.messages')\n"
        "print(json.dumps([m for m in sys.modules if m.startswith(heavy)]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout) == [], proc.stderr
