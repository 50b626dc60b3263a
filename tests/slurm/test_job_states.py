"""Every Slurm state maps to an rtrain state, keeping Slurm's name where it says more."""

import pytest

from rtrain.daemon.launchers.slurm.contract import JobReport, job_report
from rtrain.daemon.launchers.slurm.job_states import pending_sentence, verdict


def report(state: str, source: str = "sacct", **fields: object) -> JobReport:
    line = [
        "run-1",
        "42",
        source,
        state,
        str(fields.get("reason", "None")),
        str(fields.get("exit", "-")),
        str(fields.get("status", "-")),
    ]
    parsed = job_report(line)
    assert parsed is not None
    return parsed


@pytest.mark.parametrize(
    ("state", "exit_field", "status", "expected"),
    [
        ("COMPLETED", "0:0", "0", ("completed", None, 0)),
        ("FAILED", "3:0", "3", ("failed", None, 3)),
        ("FAILED", "3:0", "-", ("failed", None, 3)),
        ("TIMEOUT", "0:15", "143", ("failed", "TIMEOUT", 143)),
        ("OUT_OF_MEMORY", "0:125", "-", ("failed", "OUT_OF_MEMORY", 0)),
        ("NODE_FAIL", "0:0", "-", ("lost", "NODE_FAIL", 0)),
        ("PREEMPTED", "0:0", "-", ("lost", "PREEMPTED", 0)),
        ("CANCELLED by 1001", "0:15", "143", ("stopped", "CANCELLED", 143)),
        ("CANCELLED", "0:0", "-", ("stopped", "CANCELLED", 0)),
    ],
)
def test_an_ended_job_keeps_slurms_name_where_it_says_more(
    state: str, exit_field: str, status: str, expected: tuple[str, str | None, int]
) -> None:
    result = verdict(report(state, exit=exit_field, status=status))
    assert (result.state, result.scheduler_state, result.exit_code) == expected


def test_a_pending_job_is_queued_with_a_sentence_and_slurms_reason() -> None:
    result = verdict(report("PENDING", source="squeue", reason="Resources"), partition="gpu")
    assert result.state == "queued"
    assert (
        result.reason
        == "waiting for resources (GPUs or nodes) to free up in partition gpu (Resources)"
    )


def test_an_unlisted_pending_reason_still_shows_slurms_word() -> None:
    assert pending_sentence("AssocGrpCPUMinutesLimit", "gpu") == (
        "waiting in the queue (AssocGrpCPUMinutesLimit)"
    )


@pytest.mark.parametrize("state", ["RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"])
def test_a_job_holding_its_allocation_is_running(state: str) -> None:
    assert verdict(report(state, source="squeue")).state == "running"


def test_completing_is_said_not_hidden() -> None:
    assert "completing" in (verdict(report("COMPLETING", source="squeue")).reason or "")


def test_a_job_nobody_accounts_for_is_unknown_never_completed() -> None:
    gone = report("-", source="none", reason="accounting unavailable: sacct: error")
    result = verdict(gone)
    assert result.state == "unknown"
    assert result.reason == "accounting unavailable: sacct: error"


def test_the_runs_status_file_settles_a_job_nobody_accounts_for() -> None:
    assert verdict(report("-", source="none", status="0")).state == "completed"
    assert verdict(report("-", source="none", status="2")).exit_code == 2


def test_a_completed_job_whose_workload_failed_is_failed() -> None:
    # sacct's ExitCode is the batch shell's; the run's status file is the workload's.
    result = verdict(report("COMPLETED", exit="0:0", status="1"))
    assert (result.state, result.exit_code) == ("failed", 1)


def test_a_garbled_line_is_refused() -> None:
    assert job_report(["run-1", "42"]) is None
    assert job_report(["run-1", "42", "elsewhere", "RUNNING", "", "-", "-"]) is None
