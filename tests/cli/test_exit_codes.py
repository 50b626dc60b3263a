"""One table of exit statuses: the CLI's (exit_codes.py) and docs/cli.md's agree, and the
exit a user gets is the table's, with `--json` errors as JSON objects on stderr."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rtrain.client.cli.exit_codes import EXIT_BY_KIND
from rtrain.protocol.errors import Kind
from tests.cli.conftest import Cli

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def documented_exits() -> dict[str, int]:
    section = CLI_MD.read_text().split("| exit | error kinds |", 1)[1].split("\n\n", 1)[0]
    table: dict[str, int] = {}
    for row in section.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            for kind in re.findall(r"`([a-z_]+)`", cells[1]):
                table[kind] = int(cells[0])
    return table


def test_the_documented_table_is_the_code_table() -> None:
    assert documented_exits() == {kind: int(code) for kind, code in EXIT_BY_KIND.items()}
    assert {kind.value for kind in Kind} <= set(EXIT_BY_KIND)


def test_a_run_id_that_exists_exits_as_the_table_says(cli: Cli) -> None:
    run_id = cli.new_run_id()
    cli.start(run_id, "{python}", "-c", "print('ok')")
    again = cli(
        "start", "plain", "-c", "cfg.yaml", "--run-id", run_id, "--workdir", cli.workdir,
        "--no-follow", "--json", "--", "{python}", "-c", "print('again')",
    )  # fmt: skip
    assert (again.code, again.out) == (EXIT_BY_KIND["run_exists"], ""), again
    assert json.loads(again.err) == {
        "error": {
            "kind": "run_exists",
            "message": f"run {run_id} already exists on plain; pick another --run-id.",
        }
    }


def test_json_errors_are_objects_on_stderr_from_either_path(cli: Cli) -> None:
    # The fast path (status) and typer's (stop) say the same thing the same way.
    for words in (["status"], ["stop"], ["tail", "--no-follow"]):
        done = cli(words[0], "plain", "nosuch", *words[1:], "--workdir", cli.workdir, "--json")
        assert (done.code, done.out) == (1, ""), done
        error = json.loads(done.err)["error"]
        assert error["kind"] == "run_not_found", done
        assert error["message"].startswith("no run nosuch on plain"), done
    refused = cli("status", "bad;host", "r1", "--json")
    assert refused.code == 2, refused
    assert json.loads(refused.err)["error"]["kind"] == "invalid_host"
    # Without --json, the same error is one sentence.
    plain = cli("status", "plain", "nosuch", "--workdir", cli.workdir)
    assert plain.err.startswith("rtrain: no run nosuch on plain"), plain


def test_no_daemon_with_json_is_a_daemon_unavailable_object(cli: Cli) -> None:
    done = cli("--no-spawn", "runs", "--json")
    assert done.code == 1, done
    assert json.loads(done.err)["error"]["kind"] == "daemon_unavailable"
