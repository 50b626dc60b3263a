"""A JSON object from the daemon, as received, readable the way the protocol's Structs are."""

from __future__ import annotations

from typing import Any

from .answer_defaults import ANSWER_DEFAULTS


class WireObject(dict[str, Any]):
    """The object exactly as the daemon sent it (camelCase keys, fields in the daemon's order),
    so printing it as JSON gives back what the Struct would print.

    Attributes read it like a Struct: `run.exit_code` is `run["exitCode"]`. The daemon leaves
    out fields that hold their default; an absent one reads as that default (ANSWER_DEFAULTS,
    generated from the Structs), or None, as on the Struct.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and friends probe dunders: no such fields
            raise AttributeError(name)
        head, *rest = name.split("_")
        key = head + "".join(word.capitalize() for word in rest)
        if key in self:
            return self[key]
        default = ANSWER_DEFAULTS.get(key)
        return type(default)() if isinstance(default, list | dict) else default
