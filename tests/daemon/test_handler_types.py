"""Every handler the daemon wires is typed as the method table says: it takes the method's
params Struct and returns its result type (mypy then checks each body against that)."""

from __future__ import annotations

import asyncio
import typing
from pathlib import Path

import pytest

from rtrain.daemon.registry import Registry
from rtrain.daemon.service import Service
from rtrain.daemon.wiring import wire_operations
from rtrain.protocol.methods import METHODS, REQUESTS


def _handlers(tmp_path: Path) -> dict[str, typing.Any]:
    async def wired() -> dict[str, typing.Any]:
        registry = Registry(tmp_path / "registry.sqlite3")
        service = Service(tmp_path / "s", tmp_path, tmp_path, tmp_path / "log", registry)
        closers = wire_operations(service)
        for close in closers:
            await close()
        registry.close()
        return service.handlers

    return asyncio.run(wired())


def test_each_handler_takes_and_returns_the_table_s_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    handlers = _handlers(tmp_path)
    wrong = []
    for name, handler in handlers.items():
        method = METHODS[name]
        hints = typing.get_type_hints(handler)
        params = [v for k, v in hints.items() if k not in ("ctx", "return")]
        if params != [method.params] or hints["return"] is not method.result:
            wrong.append(f"{name}: {params} -> {hints['return']}")
    assert wrong == []
    assert sorted(handlers) == sorted(REQUESTS)
