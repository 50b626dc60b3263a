"""The batch script and sbatch arguments of a Slurm run: sans-IO, all quoting in one place.

The workload runs in the script's body, not as a detached child: under cgroup process
tracking a child that left the batch step is killed with it. Every value a user gave
reaches the script through `shlex.quote`, and sbatch's options are separate argv words, so
nothing a user typed is ever parsed by a shell or as a `#SBATCH` line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

import msgspec

# Slurm names: partitions, accounts, QOS, GRES types.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")


class SlurmRequest(msgspec.Struct, frozen=True):
    """What one run asks of Slurm: the host's defaults with the run's own overrides."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    gres_type: str | None = None
    gpus: int = 1
    nodes: int = 1
    signal_before_timeout: int | None = None  # seconds; SIGUSR2 that long before the limit
    requeue: bool = False
    extra_args: tuple[str, ...] = ()


def check_request(request: SlurmRequest) -> str | None:
    """One sentence naming the first value sbatch would refuse or misread; None when fine."""
    for label, value in (
        ("partition", request.partition),
        ("account", request.account),
        ("qos", request.qos),
        ("gres type", request.gres_type),
    ):
        if value is not None and not NAME.match(value):
            return f"{label} {value!r} is not a Slurm name (letters, digits, '_', '.', '-')."
    if request.time is not None and not TIME.match(request.time):
        return (
            f"time {request.time!r} is not a Slurm time limit "
            "(MM, HH:MM:SS, D-HH:MM or D-HH:MM:SS, e.g. 2:00:00)."
        )
    if request.gpus < 0 or request.nodes < 1:
        return "gpus must be 0 or more and nodes 1 or more."
    if (
        request.signal_before_timeout is not None
        and not 1 <= request.signal_before_timeout <= 65535
    ):
        return "--signal-before-timeout takes 1 to 65535 seconds."
    for arg in request.extra_args:
        if not arg.startswith("--") or "\n" in arg:
            return f"extra sbatch argument {arg!r} must be one --option=value word."
    return None


def sbatch_args(request: SlurmRequest, run_id: str, run_dir: str) -> list[str]:
    """sbatch's options for the run, each one argv word."""
    args = [
        f"--job-name=rtrain-{run_id}",
        f"--chdir={run_dir}",
        f"--output={run_dir}/train.log",
        "--open-mode=append",
        f"--nodes={request.nodes}",
        # One task per node: torchrun (or the workload) starts the workers itself.
        "--ntasks-per-node=1",
        "--requeue" if request.requeue else "--no-requeue",
    ]
    if request.gpus:
        kind = f"{request.gres_type}:" if request.gres_type else ""
        args.append(f"--gres=gpu:{kind}{request.gpus}")
    for option, value in (
        ("partition", request.partition),
        ("account", request.account),
        ("qos", request.qos),
        ("time", request.time),
    ):
        if value is not None:
            args.append(f"--{option}={value}")
    if request.signal_before_timeout:
        # SIGUSR1 is NCCL's; B: sends it to the batch shell, which passes it on.
        args.append(f"--signal=B:USR2@{request.signal_before_timeout}")
    args.extend(request.extra_args)
    return args


# torchrun's module, as `{torchrun}` expands, and the rendezvous port on the first node.
TORCHRUN_MODULE = "torch.distributed.run"
RENDEZVOUS_PORT = 29400
# Words of the multi-node launch that the batch shell must expand: double-quoted, never a
# user's value (those are single-quoted by shlex.quote).
_RENDEZVOUS = [
    '"--nnodes=$SLURM_NNODES"',
    "--rdzv-backend=c10d",
    f'"--rdzv-endpoint=$first_node:{RENDEZVOUS_PORT}"',
    '"--rdzv-id=$SLURM_JOB_ID"',
]


def pyxis_options(image: str, run_dir: str) -> list[str]:
    """srun's options (pyxis, NVIDIA's Slurm plug-in) that run a task inside `image`, the run
    dir mounted at the same path and the task's working directory."""
    return [
        f"--container-image={image}",
        f"--container-mounts={run_dir}:{run_dir}",
        f"--container-workdir={run_dir}",
    ]


def workload_line(command: Sequence[str], nodes: int, container: Sequence[str] = ()) -> str:
    """The workload as one shell line. On one node, the command as it is. On several, one
    srun task per node; torchrun's `--standalone` (one host only) becomes a c10d rendezvous
    on the allocation's first node, taken from Slurm's variables. `container`: pyxis'
    options, which need an srun step even on one node."""
    q = shlex.quote
    boxed = "".join(f"{q(option)} " for option in container)
    if nodes <= 1:
        step = f"srun --ntasks=1 {boxed}" if container else ""
        return step + " ".join(q(word) for word in command)
    words = [q(word) for word in command]
    if TORCHRUN_MODULE in command[:4] and "--standalone" in command:
        at = list(command).index("--standalone")
        words[at : at + 1] = _RENDEZVOUS
    first_node = 'first_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
    return first_node + f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {boxed}" + " ".join(words)


def batch_script(
    run_id: str,
    run_dir: str,
    command: Sequence[str],
    env: Mapping[str, str],
    sbatch: Sequence[str],
    setup: str | None = None,
    nodes: int = 1,
    image: str | None = None,
) -> str:
    """The script sbatch runs: the setup step, then the workload, in its body; the exit
    status to `.rtrain/status` (and `setup_failed` beside it when the setup step failed:
    rtrain's files, where no file of the trainer's reaches). With
    `nodes` > 1 the workload is one srun task per node (torchrun rendezvousing on the first).
    With `image`, the workload is an srun step inside it (pyxis); the setup step stays on
    the node, outside the image."""
    q = shlex.quote
    container = pyxis_options(image, run_dir) if image else []
    exports = "".join(f"{name}={q(value)}; export {name}\n" for name, value in env.items())
    setup_step = ""
    if setup is not None:
        setup_step = (
            f"/bin/sh -c {q(setup)} </dev/null || {{\n"
            "\tcode=$?\n"
            "\t: >.rtrain/setup_failed\n"
            '\tprintf "rtrain: the setup command failed (exit %s); the trainer was not started\\n" '
            '"$code"\n'
            "\tprintf '%s\\n' \"$code\" >.rtrain/status.tmp &&\n"
            "\t\tmv -f .rtrain/status.tmp .rtrain/status\n"
            '\texit "$code"\n'
            "}\n"
        )
    return f"""#!/bin/sh
# rtrain run {run_id}, submitted as:
#   sbatch --parsable {" ".join(q(a) for a in sbatch)} rtrain.sbatch
# The workload runs in this script's body; its exit status goes to ./.rtrain/status.
cd {q(run_dir)} || exit 125
[ -d .rtrain ] || mkdir -m 700 .rtrain || exit 125
RTRAIN_RUN_ID={q(run_id)}; export RTRAIN_RUN_ID
RTRAIN_LAUNCHER=slurm; export RTRAIN_LAUNCHER
PYTHONUNBUFFERED=1; export PYTHONUNBUFFERED
{exports}printf '%s\\n' "$SLURM_JOB_ID" >.rtrain/train.jobid.tmp &&
	mv -f .rtrain/train.jobid.tmp .rtrain/train.jobid
printf '%s\\n' - >.rtrain/status.tmp 2>/dev/null
{setup_step}child=
# Slurm signals this shell (the time-limit warning, a stop): pass it on to the workload,
# except a TERM that rtrain's stop already sent to every process of the job.
forward() {{
	if [ -n "$child" ] && {{ [ "$1" != TERM ] || [ ! -e .rtrain/stop_requested ]; }}; then
		kill -s "$1" "$child" 2>/dev/null
	fi
}}
trap 'forward USR2' USR2
trap 'forward TERM' TERM
trap 'forward INT' INT
{workload_line(command, nodes, container)} </dev/null &
child=$!
while :; do
	wait "$child"
	code=$?
	[ "$code" -le 128 ] && break
	kill -0 "$child" 2>/dev/null && continue
	wait "$child" 2>/dev/null
	again=$?
	[ "$again" = 127 ] || code=$again
	break
done
printf '%s\\n' "$code" >.rtrain/status.tmp && mv -f .rtrain/status.tmp .rtrain/status
exit "$code"
"""
