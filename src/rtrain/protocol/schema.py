"""The JSON Schema of every message, generated from the Structs in `messages`."""

from __future__ import annotations

from typing import Any

import msgspec

from .errors import BAD_INPUT_KINDS, CODES, Kind
from .locations import RULES
from .methods import METHODS
from .version import PROTOCOL_VERSION


def protocol_schema() -> dict[str, Any]:
    """One document: `$defs` for every Struct, per method its params/result references, the
    error codes and kinds, and the rules that locate the daemon."""
    kinds: list[Any] = []
    for method in METHODS.values():
        kinds.append(method.params)
        if method.result is not None and method.result is not type(None):
            kinds.append(method.result)
    refs, components = msgspec.json.schema_components(kinds, ref_template="#/$defs/{name}")
    methods: dict[str, Any] = {}
    index = 0
    for method in METHODS.values():
        entry: dict[str, Any] = {
            "summary": method.summary,
            "direction": method.direction,
            "kind": "notification" if method.is_notification else "request",
            "params": refs[index],
        }
        index += 1
        if method.result is type(None):
            entry["result"] = {"type": "null"}
        elif method.result is not None:
            entry["result"] = refs[index]
            index += 1
        methods[method.name] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rtrain daemon protocol",
        "description": "JSON-RPC 2.0 over a Unix socket with LSP base framing; see protocol.md.",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": methods,
        "errorCodes": CODES,
        # Every `error.data.kind`; the bad-input ones are the request's fault (CLI exit 2).
        "errorKinds": [kind.value for kind in Kind],
        "badInputKinds": sorted(kind.value for kind in BAD_INPUT_KINDS),
        # Where clients find the daemon: see protocol/locations.py.
        "locations": {
            place: [{"variable": variable, "path": path} for variable, path in rules]
            for place, rules in RULES.items()
        },
        "$defs": components,
    }


def protocol_schema_json() -> str:
    """The schema as committed in docs/protocol.schema.json (stable key order, trailing newline)."""
    import json

    return json.dumps(protocol_schema(), indent=2, sort_keys=True) + "\n"
