"""How an operation talks to the client that asked, besides its answer."""

from __future__ import annotations

from typing import Any, Protocol


class Notifier(Protocol):
    """The request's own client: `run/log`, `run/reconnecting`, `$/progress` go through
    here. The socket server's request context is one; a test or a batch job may bring its
    own."""

    def notify(self, method: str, params: Any) -> None: ...
