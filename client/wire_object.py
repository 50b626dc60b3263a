"""A JSON object from the daemon, as received, readable the way the protocol's Structs are."""

from __future__ import annotations

from typing import Any


class WireObject(dict[str, Any]):
    """The object exactly as the daemon sent it (camelCase keys, fields in the daemon's order),
    so printing it as JSON gives back what the Struct would print.

    Attributes read it like a Struct: `run.exit_code` is `run["exitCode"]`. The daemon leaves
    out optional fields that hold their default; those the CLI reads this way (exit code,
    signal, reason) default to None, so an absent one reads as None, as on the Struct.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and friends probe dunders: no such fields
            raise AttributeError(name)
        head, *rest = name.split("_")
        return self.get(head + "".join(word.capitalize() for word in rest))
