"""`rtrain preflight`: the verdict a user reads, its exit status, and its --json form."""

from __future__ import annotations

from rtrain.protocol.schema import protocol_schema
from tests.cli.conftest import Cli


def test_ready_host_says_so_and_exits_0(cli: Cli) -> None:
    done = cli("preflight", "plain", "--workdir", cli.workdir)
    assert done.code == 0, done
    assert done.out_lines[0] == "plain is ready to train."
    details = dict(line.strip().split(":", 1) for line in done.out_lines[1:])
    assert details["transport"].strip() == "exec"
    gpus = "0: NVIDIA H100 80GB HBM3, 1: NVIDIA H100 80GB HBM3 (2 of 2 free now)"
    assert details["gpus"].strip() == gpus

    as_json = cli("preflight", "plain", "--workdir", cli.workdir, "--json")
    assert as_json.code == 0, as_json
    verdict = as_json.json()
    assert verdict["ok"] is True
    assert verdict["reasons"] == []
    assert verdict["transport"] == "exec"
    assert [gpu["index"] for gpu in verdict["gpus"]] == [0, 1]


def test_host_without_gpus_cannot_train(cli: Cli) -> None:
    done = cli("preflight", "nogpu")
    assert done.code == 1, done
    assert done.out_lines[0] == "✗ nogpu cannot train"
    reasons = done.out_lines[1:]
    assert reasons and all(line.startswith("  ") for line in reasons), done
    assert any("GPU" in line for line in reasons), done

    as_json = cli("preflight", "nogpu", "--json")
    assert as_json.code == 1, as_json
    verdict = as_json.json()
    assert verdict["ok"] is False
    assert any("GPU" in reason for reason in verdict["reasons"])


def test_unreachable_host_is_not_ready(cli: Cli) -> None:
    done = cli("preflight", "closed")
    assert done.code == 1, done
    assert done.out_lines[0] == "✗ closed cannot train"
    assert "host unreachable" in done.out, done


def test_password_only_host_fails_fast_without_a_prompt(cli: Cli) -> None:
    # stdin is /dev/null and there is no tty: a prompt would hang until the timeout.
    done = cli("preflight", "passonly", "--json")
    assert done.code == 1, done
    (reason,) = done.json()["reasons"]
    assert "key authentication" in reason, reason
    assert "password:" not in done.err.lower()


def test_an_unknown_alias_says_which_ssh_config_hides_it(cli: Cli) -> None:
    done = cli("preflight", "nosuch-alias", "--json")
    assert done.code == 1, done
    (reason,) = done.json()["reasons"]
    config = cli.env["RTRAIN_SSH_CONFIG"]
    assert reason.startswith("host unreachable: nosuch-alias: ssh: Could not resolve"), reason
    assert f"rtrain reads the ssh config {config} (RTRAIN_SSH_CONFIG" in reason, reason
    assert "~/.ssh/config" in reason and f"add `Host nosuch-alias` to {config}" in reason


def test_json_leaves_out_empty_defaults_but_keeps_required_lists(cli: Cli) -> None:
    # As docs/cli.md says: `reasons` has no default and is always there, `gpus` is left
    # out when empty.
    ready = cli("preflight", "plain", "--gpus", "0", "--workdir", cli.workdir, "--json").json()
    assert ready["reasons"] == []
    nogpu = cli("preflight", "nogpu", "--json").json()
    assert "gpus" not in nogpu and nogpu["reasons"], nogpu
    preflight = protocol_schema()["$defs"]["PreflightResult"]
    assert "reasons" in preflight["required"] and "gpus" not in preflight["required"]
