"""Turning what ssh printed on a failure into one sentence a user can act on."""

from __future__ import annotations

from pathlib import Path

from rtrain.protocol.errors import Kind, RpcError, app_error


def classify(
    alias: str, stderr: str, returncode: int | None, ssh_config: Path | None = None
) -> RpcError:
    """`ssh_config` is the file passed as `ssh -F`, if any: it hides ~/.ssh/config."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else f"ssh exited with status {returncode}"
    lowered = text.lower()
    if (
        "remote host identification has changed" in lowered
        or "host key for" in lowered
        and ("has changed" in lowered)
    ):
        return app_error(
            Kind.HOST_KEY_CHANGED,
            f"{alias}: the host key changed since you last connected. If the host was rebuilt, "
            f"remove the old key with `ssh-keygen -R <hostname>` and connect once with "
            f"`ssh {alias}` to check the new one; otherwise someone may be intercepting.",
            detail=last,
        )
    if "host key verification failed" in lowered or "no host key is known" in lowered:
        return app_error(
            Kind.HOST_KEY_CHANGED,
            f"{alias}: the host key is not known or did not match. Connect once with "
            f"`ssh {alias}` to check and accept it (rtrain never skips host-key checking).",
            detail=last,
        )
    if asks_a_person(lowered):
        return login_required(alias, last)
    if "permission denied" in lowered or "too many authentication failures" in lowered:
        return app_error(
            Kind.AUTH_FAILED,
            f"{alias}: ssh could not log in without a prompt ({last}). Set up key "
            f"authentication (e.g. `ssh-copy-id {alias}`) so `ssh {alias} true` works without "
            f"a password, or, for a key that needs a passphrase or a touch, log in once with "
            f"`rtrain login {alias}`.",
            detail=last,
        )
    unreachable = (
        "connection refused",
        "timed out",
        "no route to host",
        "could not resolve",
        "name or service not known",
        "network is unreachable",
        "connection closed",
        "connection reset",
        "broken pipe",
        "kex_exchange_identification",
        "timeout, server",
    )
    unknown_alias = (
        "could not resolve hostname" in lowered or "name or service not known" in lowered
    )
    if unknown_alias and ssh_config is not None:
        return app_error(
            Kind.HOST_UNREACHABLE,
            f"host unreachable: {alias}: {last}. rtrain reads the ssh config {ssh_config} "
            "(RTRAIN_SSH_CONFIG, or ssh_config in the user config) instead of ~/.ssh/config, "
            f"so aliases there are not seen: add `Host {alias}` to {ssh_config}, or "
            "`Include ~/.ssh/config` at its top.",
            detail=last,
        )
    if any(word in lowered for word in unreachable) or returncode == 255:
        return app_error(Kind.HOST_UNREACHABLE, f"host unreachable: {alias}: {last}", detail=last)
    return app_error(Kind.REMOTE_FAILED, f"{alias}: {last}", detail=last)


def asks_a_person(lowered: str) -> bool:
    """ssh gave up where the host wanted a password or a second factor (keyboard-interactive
    carries OTP and Duo prompts), which BatchMode never answers."""
    for line in lowered.splitlines():
        if "permission denied (" in line:
            methods = line.split("permission denied (", 1)[1].split(")", 1)[0].split(",")
            return bool({"password", "keyboard-interactive"} & {m.strip() for m in methods})
    return False


def login_required(alias: str, detail: str | None = None) -> RpcError:
    """The one sentence for a host that needs `rtrain login`, before a login and after one
    ended."""
    return app_error(
        Kind.LOGIN_REQUIRED,
        f"{alias} asks for a password or a second factor, which rtrain never types: log in "
        f"once with `rtrain login {alias}` (or set up key authentication, e.g. "
        f"`ssh-copy-id {alias}`, where the host allows it).",
        detail=detail,
        host=alias,  # for clients that offer the login themselves (the VS Code extension)
    )


# The one reading of the taxonomy every operation shares. Asking a far-side script again
# does no harm: prepare and launch claim atomically (a repeat is refused, never doubled),
# and the others only look or converge; so "the answer may be lost" means "ask again".
_ANSWER_MAY_BE_LOST = frozenset({Kind.HOST_UNREACHABLE, Kind.TIMEOUT})
_LOGIN_REFUSED = frozenset({Kind.AUTH_FAILED, Kind.LOGIN_REQUIRED, Kind.HOST_KEY_CHANGED})


def answer_may_be_lost(error: RpcError) -> bool:
    """The connection failed or stalled: the command may or may not have run on the host,
    and only asking again (which is safe) tells."""
    return error.kind in _ANSWER_MAY_BE_LOST


def host_did_not_answer(error: RpcError) -> bool:
    """The host said nothing about the question: its answer may be lost, or the login was
    refused (authentication, a changed host key) and nothing ran."""
    return answer_may_be_lost(error) or error.kind in _LOGIN_REFUSED
