"""A JSON object from the daemon, as received, readable the way the protocol's Structs are."""

from __future__ import annotations

from typing import Any

from .answer_defaults import ANSWER_DEFAULTS

_DICT_NAMES = frozenset(dir(dict))


class WireObject(dict[str, Any]):
    """The object exactly as the daemon sent it (camelCase keys, fields in the daemon's order),
    so printing it as JSON gives back what the Struct would print.

    Attributes read it like a Struct: `run.exit_code` is `run["exitCode"]`. The daemon leaves
    out fields that hold their default; an absent one reads as that default (ANSWER_DEFAULTS,
    generated from the Structs), or None, as on the Struct.
    """

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        # A field named like a dict method (a metric series' `values`) is read as the
        # field whenever the object has it; the method otherwise.
        if name in _DICT_NAMES and not name.startswith("_") and dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return dict.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and friends probe dunders: no such fields
            raise AttributeError(name)
        head, *rest = name.split("_")
        key = head + "".join(word.capitalize() for word in rest)
        if key in self:
            return self[key]
        default = ANSWER_DEFAULTS.get(key)
        return type(default)() if isinstance(default, list | dict) else default
