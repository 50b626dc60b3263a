"""The far-side contract is kept in one place (remote/contract/, and each launcher's
contract.py): the exit codes agree with lib/core.sh, and no other daemon module reads a
script's machine lines or compares its exit status to a number."""

from __future__ import annotations

import re
from pathlib import Path

import rtrain.daemon
from rtrain.daemon.remote.contract import run_scripts
from rtrain.daemon.remote.contract.answers import Exit, Lines

DAEMON = Path(rtrain.daemon.__file__).parent
CORE_SH = DAEMON / "remote" / "scripts" / "lib" / "core.sh"


def test_the_exit_codes_are_core_sh_s() -> None:
    in_sh = {
        name: int(code)
        for name, code in re.findall(r"^E_([A-Z_]+)=(\d+)$", CORE_SH.read_text(), re.M)
    }
    in_python = {code.name: code.value for code in Exit if code is not Exit.OK}
    assert in_sh, "core.sh defines no E_* codes any more"
    assert in_python == in_sh


def test_every_script_that_uses_a_code_uses_one_of_the_table() -> None:
    scripts = [
        *(DAEMON / "remote" / "scripts").glob("**/*.sh"),
        *DAEMON.glob("launchers/*/scripts/*.sh"),
    ]
    used = {name for s in scripts for name in re.findall(r"\$\{?E_([A-Z_]+)", s.read_text())}
    assert used <= {code.name for code in Exit}


# Modules whose processes are no far-side script: the user's notify command on this machine,
# `ssh -W` under a port forward or `ssh -O forward -R` (ssh's own exit status), and the
# tracker's importer that a sync runs on this machine.
_NO_FAR_SCRIPT = {
    "run_end_notify.py",
    "forwards.py",
    "reverse_forwards.py",
    "sync.py",
    "wandb_import.py",
}
# Programs that run on the far host inside a script: they write machine lines, not read them.
_FAR_PROGRAMS = {"cache_inputs.py", "preflight_probe.py"}


def test_only_the_contract_reads_machine_lines_or_exit_numbers() -> None:
    offenders = []
    for path in DAEMON.rglob("*.py"):
        if (
            path.name in _NO_FAR_SCRIPT | _FAR_PROGRAMS
            # The contract's families, and each launcher's own (its package's contract.py).
            or path.name == "contract.py"
            or "contract" in path.relative_to(DAEMON).parts[:-1]
            or "demo_trainer" in path.parts
        ):
            continue
        text = path.read_text()
        if re.search(r"returncode\s*[!=]=\s*(?!255)\d+|\.returncode in \(", text):
            offenders.append(f"{path.name}: compares an exit status to a number")
        if re.search(r"""split\(\s*["']\\t["']""", text):
            offenders.append(f"{path.name}: splits machine lines itself")
    assert offenders == []


def test_lines_keep_every_row_and_the_last_of_a_key() -> None:
    lines = Lines(b"file\t3\t-\ta\nfile\t4\t-\tb\nerror\tnot_found\tx\nerror\tlast\nempty\n")
    assert lines.rows("file") == [["3", "-", "a"], ["4", "-", "b"]]
    assert lines.last("error") == ["last"]
    assert lines.value("empty") == ""
    assert lines.value("absent") is None and "absent" not in lines and "file" in lines
    assert not Lines(b"")


def test_a_status_row_with_dashes_reads_as_nothing_known() -> None:
    [row] = [run_scripts.run_row(["r1", "missing", "-", "-", "-", "invalid run id"])]
    assert row == run_scripts.RunRow("r1", "missing", None, None, None, "invalid run id")
    assert not row.exists
    assert run_scripts.run_row(["r2", "failed", "137", "9", "17.5", "-"]) == run_scripts.RunRow(
        "r2", "failed", 137, 9, 17.5, None
    )
