"""Checks on user input that must pass before anything reaches a shell or an ssh command line.

Each returns the value (normalised) or raises RpcError with a stable kind and one sentence.
Shared by the daemon (authoritative) and the client (to fail before any request).
"""

from __future__ import annotations

import re

from .errors import Kind, app_error

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_WORKDIR = re.compile(r"~?[A-Za-z0-9._/-]*")
# An ssh alias or user@host[:port]-free hostname: no leading dash, no whitespace or shell syntax.
_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@-]{0,252}")
# A pool of config.toml, as a host is named where one may stand for it: `@lab`.
_POOL = re.compile(r"@[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_PYTHON = re.compile(r"[A-Za-z0-9_./+-]{1,255}")
# A container image reference: registry/name:tag or @digest, as Docker and Podman spell them.
# An image name, a URI (Apptainer's docker://...), or an absolute path (an Apptainer .sif).
_IMAGE = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._/:@+-]{0,254}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# A Hub repo id: NAME or ORG/NAME, as huggingface_hub's validate_repo_id accepts them.
_HF_MODEL = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def run_id(value: str) -> str:
    if not _RUN_ID.fullmatch(value) or value in (".", ".."):
        raise app_error(
            Kind.INVALID_RUN_ID,
            f"run id {value!r} is not usable: letters, digits, dot, dash and underscore only, "
            "starting with a letter or digit, up to 64 characters.",
        )
    return value


def workdir(value: str) -> str:
    bad = (
        not value
        or value.startswith("-")
        or not _WORKDIR.fullmatch(value)
        or "/../" in f"/{value}/"
        or (value.startswith("~") and value not in ("~",) and not value.startswith("~/"))
    )
    if bad:
        raise app_error(
            Kind.INVALID_WORKDIR,
            f"workdir {value!r} may only contain letters, digits and ._-/ (not starting with -) "
            "with an optional "
            "leading ~/ (it is expanded on the host), and no '..'.",
        )
    return value.rstrip("/") or "/"


def host(value: str) -> str:
    if _POOL.fullmatch(value):
        raise app_error(
            Kind.INVALID_HOST,
            f"{value} is a pool, not a host: this needs the host the run went to "
            f"(`rtrain status {value} RUN` says which).",
        )
    if not _HOST.fullmatch(value):
        raise app_error(
            Kind.INVALID_HOST,
            f"host {value!r} is not a usable ssh alias: use the name of a Host entry in your ssh "
            "config (letters, digits and ._@-, starting with a letter, digit or underscore).",
        )
    return value


def python(value: str) -> str:
    # A leading ~/ is expanded on the host (a venv in the remote home), like the workdir.
    bare = value[2:] if value.startswith("~/") else value
    if not _PYTHON.fullmatch(bare) or value.startswith("-"):
        raise app_error(
            Kind.INVALID_COMMAND,
            f"python {value!r} is not usable: give a command name or path "
            "(letters, digits and _./+-, optionally starting with ~/).",
        )
    return value


def image(value: str) -> str:
    if not _IMAGE.fullmatch(value):
        raise app_error(
            Kind.INVALID_COMMAND,
            f"image {value!r} is not an image name: give one like python:3.12-slim, "
            "registry.example.com/team/train@sha256:... or /shared/train.sif "
            "(letters, digits and ._/:@+-).",
        )
    return value


def secret_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise app_error(
            Kind.INVALID_SECRET,
            f"secret name {value!r} is not an environment variable name "
            "(letters, digits and _, not starting with a digit).",
        )
    return value


def hf_model(value: str) -> str:
    if not _HF_MODEL.fullmatch(value) or ".." in value or value.endswith((".git", ".")):
        raise app_error(
            Kind.INVALID_MODEL,
            f"Hugging Face model {value!r} is not a model id: give ORG/NAME as on its page, "
            "e.g. meta-llama/Llama-3.1-8B.",
        )
    return value


def requirement(value: str) -> str:
    """A PEP 508 requirement (`transformers>=5`, `peft`); returns its distribution name."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(value).name
    except InvalidRequirement as error:
        raise app_error(
            Kind.INVALID_REQUIREMENT,
            f"requirement {value!r} is not one pip understands "
            f"({str(error).splitlines()[0]}); "
            "write it like 'transformers>=5' or 'peft'.",
        ) from None


def env_var(name: str, value: str, source: str = "--env") -> str:
    """A `--env NAME=VALUE` pair: a variable name rtrain does not keep for itself, any value
    without a NUL (which no environment can hold). `source` names where the pair came from
    in the sentence (a host's `env` in config.toml)."""
    if not _ENV_NAME.fullmatch(name):
        raise app_error(
            Kind.INVALID_COMMAND,
            f"{source} {name!r}: not an environment variable name "
            "(letters, digits and _, not starting with a digit).",
        )
    if name == RUN_MARKER:
        raise app_error(
            Kind.INVALID_COMMAND,
            f"{source} {name}: rtrain sets {RUN_MARKER} itself (it marks the run's processes).",
        )
    if "\0" in value:
        raise app_error(Kind.INVALID_COMMAND, f"{source} {name}: the value holds a NUL byte.")
    return name


# The variable that marks every process of a run; the far side sets it, nobody else.
RUN_MARKER = "RTRAIN_RUN_ID"


def fetch_path(value: str) -> str:
    """A path inside the run dir: relative, no `..`, not empty. Returns it without './'."""
    stripped = value.strip()
    parts = [p for p in stripped.split("/") if p not in ("", ".")]
    if not stripped or stripped.startswith("/") or ".." in stripped.split("/"):
        raise app_error(
            Kind.PATH_OUTSIDE_RUN if stripped else Kind.INVALID_PATH,
            f"{value!r} points outside the run directory. Fetch paths are relative to it, "
            "e.g. 'lora_model' or 'train.log'."
            if stripped
            else "The fetch path is empty: name a file or directory inside the run directory.",
        )
    if any(c in value for c in "\n\t\0"):
        raise app_error(Kind.INVALID_PATH, f"{value!r} contains a control character.")
    return "/".join(parts) or "."


def host_or_pool(value: str) -> str:
    """A host, or `@NAME` for a pool of config.toml (run/start, status, stop, rm)."""
    if value.startswith("@"):
        if not _POOL.fullmatch(value):
            raise app_error(
                Kind.INVALID_HOST,
                f"pool {value!r} is not a usable name: @ then letters, digits and ._- "
                "(starting with a letter, digit or underscore), up to 64 characters.",
            )
        return value
    return host(value)
