"""Hugging Face access from the host: a local Hub answering `auth-check` as the real one does,
the far side's HF_ENDPOINT pointing at it, and the token only ever in Authorization."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.pythons_host import PythonsHost
from tests.operations.harness import Ops

TOKEN = "hf_" + uuid.uuid4().hex
PREFIX = "/api/models/"
SUFFIX = "/auth-check"


@dataclass
class Seen:
    """One request as it arrived, and what processes showed while it was being answered."""

    path: str
    headers: dict[str, str]
    command_lines_with_token: list[str] = field(default_factory=list)


class FakeHub(ThreadingHTTPServer):
    requests: list[Seen]


class HubHandler(BaseHTTPRequestHandler):
    """The Hub's answers for the repos these tests ask about (status and X-Error-Code as
    huggingface.co sends them; bodies are its JSON `{"error": ...}`)."""

    server: FakeHub

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        seen = Seen(self.path, {key: value for key, value in self.headers.items()})
        seen.command_lines_with_token = _command_lines_with(TOKEN)
        self.server.requests.append(seen)
        auth = self.headers.get("Authorization")
        token = auth.removeprefix("Bearer ") if auth else None
        if not (self.path.startswith(PREFIX) and self.path.endswith(SUFFIX)):
            return self._answer(404, "RepoNotFound", "Repository not found")
        repo = self.path[len(PREFIX) : -len(SUFFIX)]
        if token is not None and token != TOKEN:
            return self._answer(401, None, "Invalid credentials in Authorization header")
        if repo == "org/open":
            return self._answer(200, None, None)
        if repo == "org/renamed":
            self.send_response(307)
            self.send_header("Location", f"{PREFIX}org/granted{SUFFIX}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        gated = {"org/gated", "org/granted", "org/fine-grained"}
        if repo in gated and token is None:
            return self._answer(
                401,
                "GatedRepo",
                f"Access to model {repo} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in.",
            )
        if repo == "org/gated":
            return self._answer(
                403,
                "GatedRepo",
                f"Access to model {repo} is restricted and you are not in the authorized list. "
                f"Visit https://huggingface.co/{repo} to ask for access.",
            )
        if repo == "org/granted":
            return self._answer(200, None, None)
        if repo == "org/fine-grained":
            return self._answer(
                403,
                None,
                "This authentication method does not have "
                "sufficient permissions to call this route.",
            )
        return self._answer(404, "RepoNotFound", "Repository not found")

    def _answer(self, status: int, code: str | None, message: str | None) -> None:
        body = b'{"exists":true}' if status == 200 else f'{{"error":"{message}"}}'.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        if code:
            self.send_header("X-Error-Code", code)
        if message:
            self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _command_lines_with(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(text.encode() in word for word in words):
            found.append(" ".join(w.decode(errors="replace") for w in words))
    return found


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    server = FakeHub(("127.0.0.1", 0), HubHandler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _alias(pythons_host: PythonsHost, endpoint: str) -> str:
    return pythons_host.alias(f"hub-{uuid.uuid4().hex[:6]}", {"HF_ENDPOINT": endpoint})


def _preflight(ops: Ops, host: str, python: str, models: list[str], **params: object) -> Any:
    return ops.request(
        "host/preflight", {"host": host, "gpus": 0, "python": python, "hfModels": models, **params}
    )


def test_each_answer_of_the_hub_says_what_to_do(
    ops: Ops, pythons_host: PythonsHost, hub: FakeHub
) -> None:
    endpoint = f"http://127.0.0.1:{hub.server_address[1]}"
    host = _alias(pythons_host, endpoint)
    models = ["org/open", "org/gated", "org/granted", "org/fine-grained", "org/missing"]
    result = _preflight(ops, host, pythons_host.train_python, models, secrets={"HF_TOKEN": TOKEN})

    verdicts = {access.model: access for access in result.hugging_face}
    assert {model: verdicts[model].verdict for model in models} == {
        "org/open": "ok",
        "org/gated": "not_granted",
        "org/granted": "ok",
        "org/fine-grained": "token_scope",
        "org/missing": "not_found",
    }
    assert verdicts["org/gated"].status == 403 and verdicts["org/gated"].error_code == "GatedRepo"
    assert "accept the license at https://huggingface.co/org/gated" in verdicts["org/gated"].message
    assert "enable it in your token's settings" in verdicts["org/fine-grained"].message
    assert all(access.endpoint == endpoint for access in verdicts.values())
    assert verdicts["org/open"].token_source == "secret"
    # A model that cannot be downloaded makes the host not ready, one sentence each.
    assert not result.ok
    assert result.reasons == [verdicts[m].message for m in models if not verdicts[m].ok]

    # The token reached the Hub in the Authorization header and nowhere else.
    assert len(hub.requests) == len(models)
    for seen in hub.requests:
        assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
        assert TOKEN not in seen.path
        others = {k: v for k, v in seen.headers.items() if k != "Authorization"}
        assert TOKEN not in repr(others)
        assert seen.command_lines_with_token == [], "the token was on a command line"
    for path in ops.daemon.root.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), f"the token is in {path}"


def test_without_a_token_a_gated_model_says_set_hf_token(
    ops: Ops, pythons_host: PythonsHost, hub: FakeHub
) -> None:
    host = _alias(pythons_host, f"http://127.0.0.1:{hub.server_address[1]}")
    result = _preflight(ops, host, pythons_host.train_python, ["org/granted", "org/open"])

    [gated, public] = result.hugging_face
    assert (gated.verdict, gated.status, gated.error_code) == ("no_token", 401, "GatedRepo")
    assert "no token reached the Hub" in gated.message and "HF_TOKEN" in gated.message
    assert gated.token_source == "none"
    assert public.ok
    assert result.reasons == [gated.message]
    assert all("Authorization" not in seen.headers for seen in hub.requests)


def test_a_wrong_token_and_a_redirect(ops: Ops, pythons_host: PythonsHost, hub: FakeHub) -> None:
    host = _alias(pythons_host, f"http://127.0.0.1:{hub.server_address[1]}")
    wrong = _preflight(
        ops, host, pythons_host.train_python, ["org/open"], secrets={"HF_TOKEN": "hf_wrong"}
    )
    [access] = wrong.hugging_face
    assert access.verdict == "no_token" and "refused the token" in access.message

    # A renamed repo answers with a redirect on the same Hub: followed, token and all.
    moved = _preflight(
        ops, host, pythons_host.train_python, ["org/renamed"], secrets={"HF_TOKEN": TOKEN}
    )
    assert moved.ok, moved.reasons
    assert [seen.path for seen in hub.requests[-2:]] == [
        f"{PREFIX}org/renamed{SUFFIX}",
        f"{PREFIX}org/granted{SUFFIX}",
    ]


def test_an_unreachable_hub_is_said_as_such(ops: Ops, pythons_host: PythonsHost) -> None:
    endpoint = f"http://127.0.0.1:{ops.hosts.closed_port}"
    host = _alias(pythons_host, endpoint)
    result = _preflight(ops, host, pythons_host.train_python, ["org/open"])

    assert not result.ok
    [access] = result.hugging_face
    assert access.verdict == "unreachable" and access.status is None
    assert access.message.startswith(f"the host cannot reach the Hub at {endpoint} to check ")
    assert "refused" in access.message.lower(), access.message


def test_a_model_id_that_is_not_one_is_refused_before_the_host(ops: Ops) -> None:
    with pytest.raises(Exception) as refused:
        ops.request("host/preflight", {"host": "plain", "hfModels": ["org/../../etc"]})
    assert "is not a model id" in str(refused.value)
