"""Hugging Face access: what the Hub's answer to `/api/models/ID/auth-check` means.

The far side asks the way `huggingface_hub.auth_check` does; this maps status codes and the
`X-Error-Code` header to what the user should do.
"""

from __future__ import annotations

from rtrain.daemon.remote.contract.preflight_scripts import PreflightReport, ProbedHub
from rtrain.protocol.messages import HubAccess, HubVerdict

HUB_SITE = "https://huggingface.co"


def _meaning(probed: ProbedHub, token_source: str | None, endpoint: str) -> tuple[HubVerdict, str]:
    model = probed.model
    status = probed.status
    code = probed.error_code
    page = f"{HUB_SITE}/{model}"
    no_token = token_source in (None, "none")
    if status is None:
        return "unreachable", (
            f"the host cannot reach the Hub at {endpoint} to check {model}: "
            f"{probed.message or 'no answer'}"
        )
    if 200 <= status < 300:
        return "ok", f"{model}: the host can download it"
    if status == 401 and code == "GatedRepo":
        who = "no token reached the Hub" if no_token else "the Hub refused the token"
        return "no_token", (
            f"{model} is gated and {who}: set HF_TOKEN to a token of an account with access "
            "and pass --secret HF_TOKEN"
        )
    if status == 403 and code == "GatedRepo":
        return "not_granted", (
            f"{model} is gated and this account has not been granted access: "
            f"accept the license at {page}"
        )
    if status == 403:
        return "token_scope", (
            f"{model}: the Hub refused the token (403); a fine-grained token needs the "
            "'Read access to contents of all public gated repos you can access' scope: "
            "enable it in your token's settings"
        )
    if status == 401 and code != "RepoNotFound" and not no_token:
        return "no_token", (
            f"{model}: the Hub refused the token (401: invalid or expired): "
            "set HF_TOKEN to a valid token and pass --secret HF_TOKEN"
        )
    if status == 404 or code == "RepoNotFound" or status == 401:
        hint = " (or pass --secret HF_TOKEN for a private one)" if no_token else ""
        return "not_found", (
            f"{model}: no such model on the Hub, or a private one this token cannot see{hint}"
        )
    detail = f": {probed.message}" if probed.message else ""
    return "error", f"{model}: the Hub answered HTTP {status}{detail}"


def judge_hub(report: PreflightReport, models: list[str]) -> list[HubAccess]:
    endpoint = report.hub_endpoint or HUB_SITE
    found = {probed.model: probed for probed in report.hub}
    verdicts = []
    for model in models:
        probed = found.get(model)
        if probed is None:
            why = report.hub_failed or "the check did not run"
            verdicts.append(
                HubAccess(
                    model=model,
                    ok=False,
                    verdict="error",
                    message=f"{model}: the Hub could not be asked: {why}",
                    endpoint=endpoint,
                    token_source=report.hub_token_source,
                )
            )
            continue
        verdict, message = _meaning(probed, report.hub_token_source, endpoint)
        verdicts.append(
            HubAccess(
                model=model,
                ok=verdict == "ok",
                verdict=verdict,
                message=message,
                status=probed.status,
                error_code=probed.error_code,
                endpoint=endpoint,
                token_source=report.hub_token_source,
            )
        )
    return verdicts
