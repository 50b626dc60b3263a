"""Connect the operations to the service's method table; returns what to close at exit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .service import Service


def wire_operations(service: Service) -> list[Callable[[], Awaitable[None]]]:
    return []
