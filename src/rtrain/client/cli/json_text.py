"""JSON text exactly as msgspec writes it, from the standard library alone.

The CLI prints the client's answers (plain JSON data) without loading msgspec, and its
`--json` output is byte for byte what the daemon's msgspec wrote. Python's json writes
the same compact text as msgspec (`ensure_ascii=False`, no spaces) except for floats: msgspec
keeps the same shortest digits but writes `1e16` and `2.5e-7` (no `+`, no leading zero in the
exponent), `0.00001` for a float in [1e-5, 1e-4), and null for NaN and infinities.
"""

from __future__ import annotations

import json
import math
from typing import Any


def json_text(value: Any) -> str:
    """`msgspec.json.encode(value).decode()` for dicts (str keys), lists, str, int, float,
    bool and None."""
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dict):
        # dict.items, not value.items: an answer may have a field named `items`.
        pairs = dict.items(value)
        items = (f"{_string(key)}:{json_text(item)}" for key, item in pairs)
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(json_text(item) for item in value) + "]"
    if isinstance(value, str | int) or value is None:  # bool is an int
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"not JSON data: {type(value).__name__}")


def _string(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a JSON object key is a string, not {type(key).__name__}")
    return json.dumps(key, ensure_ascii=False)


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        return "null"
    text = repr(value)  # the shortest digits that read back as the same float, as msgspec's
    mantissa, has_exponent, exponent = text.partition("e")
    if not has_exponent:
        return text
    power = int(exponent)
    if power == -5:
        sign = "-" if mantissa.startswith("-") else ""
        return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"
    return f"{mantissa}e{power}"
