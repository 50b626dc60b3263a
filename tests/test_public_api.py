"""The public API as a type checker and a caller see it (trio's test_exports): every name
in `rtrain.__all__` resolves, the type checker is told of each, every public callable is
annotated throughout, the package ships py.typed, and every error kind of the protocol has
exactly one exception class."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import rtrain
from rtrain.client import errors
from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol.errors import Kind

PACKAGE = Path(rtrain.__file__).parent


def test_every_public_name_resolves_from_the_package() -> None:
    for name in rtrain.__all__:
        assert getattr(rtrain, name) is not None, name
    assert len(set(rtrain.__all__)) == len(rtrain.__all__)


def test_the_type_checker_is_told_of_every_public_name() -> None:
    # `rtrain` imports its API lazily; the TYPE_CHECKING imports are what mypy reads.
    told = {"__version__"}
    for node in ast.walk(ast.parse((PACKAGE / "__init__.py").read_text())):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    told |= {alias.asname or alias.name for alias in statement.names}
    assert told == set(rtrain.__all__)


def _public_callables() -> list[tuple[str, typing.Callable[..., object]]]:
    found: list[tuple[str, typing.Callable[..., object]]] = []
    for name in rtrain.__all__:
        value = getattr(rtrain, name)
        if not inspect.isclass(value):
            continue
        for attribute, member in vars(value).items():
            if inspect.isfunction(member) and (
                not attribute.startswith("_") or attribute == "__init__"
            ):
                found.append((f"{name}.{attribute}", member))
    return found


def test_every_public_callable_is_annotated_throughout() -> None:
    missing = []
    for where, function in _public_callables():
        hints = typing.get_type_hints(function)  # resolves every annotation, or raises
        for parameter in list(inspect.signature(function).parameters)[1:]:
            if parameter not in hints:
                missing.append(f"{where}({parameter})")
        if "return" not in hints:
            missing.append(f"{where} -> ?")
        elif hints["return"] is typing.Any:
            # A caller's type checker would learn nothing of the answer.
            missing.append(f"{where} -> Any")
    assert missing == []
    assert len(_public_callables()) >= 15  # the runner's methods, at least


def test_the_package_ships_py_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (PACKAGE.parent.parent / "pyproject.toml").read_text()
    assert '"rtrain" = ["py.typed"]' in pyproject


def test_every_error_kind_has_one_class_under_its_meaning() -> None:
    assert set(errors.ERROR_CLASSES) == set(Kind)
    classes = list(errors.ERROR_CLASSES.values())
    assert len(set(classes)) == len(classes)
    for kind, cls in errors.ERROR_CLASSES.items():
        raised = errors.remote_error("no.", kind.value, -32001, {"kind": kind.value})
        assert type(raised) is cls and raised.kind is kind, kind
        assert cls is not errors.RemoteError and issubclass(cls, errors.RemoteError)
        assert cls.__name__ in rtrain.__all__, cls
    # A kind this version does not know (a newer daemon's): a plain RemoteError that still
    # says the word it was sent.
    newer = errors.remote_error("no.", "quota_exceeded", -32001, {"kind": "quota_exceeded"})
    assert type(newer) is errors.RemoteError
    assert (newer.kind, newer.kind_name) == (None, "quota_exceeded")


def test_the_errors_a_caller_catches_by_meaning() -> None:
    meaning = {
        Kind.TIMEOUT: errors.HostUnreachable,
        Kind.AUTH_FAILED: errors.HostUnreachable,
        Kind.RUN_EXISTS: errors.RunRefused,
        Kind.NOT_A_RUN: errors.RunRefused,
        Kind.INVALID_RUN_ID: errors.BadRequest,
        Kind.RUN_NOT_FOUND: errors.NotFound,
        Kind.LOCAL_IO: errors.OperationFailed,
    }
    for kind, group in meaning.items():
        assert issubclass(errors.ERROR_CLASSES[kind], group), kind


def test_the_kind_is_typed_as_the_enum() -> None:
    hints = typing.get_type_hints(errors.RemoteError.__init__)
    assert hints["kind"] == Kind | str | None
    raised = errors.remote_error("no.", "run_exists", -32001, None)
    assert isinstance(raised.kind, Kind)
    assert typing.get_type_hints(DaemonClient.call)["return"] is not typing.Any


def test_a_wire_request_is_typed_by_its_method() -> None:
    # The property's type is requests.WireRequest: one overload per request method, each
    # answered with its method's answer view (mypy checks every caller against it).
    request = vars(DaemonClient)["request"]
    assert isinstance(request, property) and request.fget is not None
    assert request.fget.__annotations__["return"] == "WireRequest"
    from rtrain.protocol.methods import REQUESTS

    generated = (PACKAGE / "protocol" / "requests.py").read_text()
    overloads = generated[generated.index("class WireRequest(Protocol):") :]
    for method in REQUESTS:
        assert f'method: Literal["{method}"]' in overloads, method
    assert "-> Any: ..." not in overloads
