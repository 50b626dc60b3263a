"""A trainer shaped like nanoGPT's train.py (none of its code): `--key=value` overrides, rank
0 prints `iter N: loss X, time Yms, mfu Z%` and `step N: train loss X, val loss Y`, a
checkpoint `out/ckpt.pt` at every eval, and it resumes only when told (`--init_from=resume`).
Under torchrun the ranks average their gradients over gloo (CPU), so a rank that dies takes
the others down with a collective error of their own, as in a real DDP run.

Test knobs: `--fail_rank=R --fail_iter=N --fail_how=raise|exit3|kill` makes rank R fail at
iteration N (an exception, `sys.exit(3)` after a line on stderr, or SIGKILL of itself),
with `--record=1` under torch's `@record` (every failing rank writes its error file);
`--lines=N` makes every rank print N numbered lines at once and exit (no training).
"""

import os
import signal
import sys
import time
from typing import Any

settings: dict[str, Any] = {
    "out_dir": "out",
    "max_iters": 20,
    "eval_interval": 10,
    "init_from": "scratch",
    "learning_rate": 0.05,
    "fail_rank": -1,
    "fail_iter": -1,
    "fail_how": "raise",
    "lines": 0,
    "record": 0,
}
for argument in sys.argv[1:]:
    key, _, value = argument.removeprefix("--").partition("=")
    if key not in settings:
        sys.exit(f"unknown setting {key!r}")
    settings[key] = type(settings[key])(value)

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))

if settings["lines"]:
    # Each line is long enough that two ranks writing at once would show it broken.
    payload = "x" * 64
    for number in range(int(settings["lines"])):
        print(f"rank {rank} line {number} {payload}")
    sys.exit(0)

import torch  # noqa: E402 (the line flood above needs no torch)
import torch.distributed as dist  # noqa: E402

if world > 1:
    dist.init_process_group("gloo")
torch.manual_seed(1234)
model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=float(settings["learning_rate"]))
inputs = torch.randn(64, 8)
targets = inputs @ torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8
out_dir = str(settings["out_dir"])
checkpoint = os.path.join(out_dir, "ckpt.pt")
iter_num = 0
if settings["init_from"] == "resume":
    state = torch.load(checkpoint)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    iter_num = int(state["iter_num"])
    if rank == 0:
        print(f"Resuming training from {out_dir} at iter {iter_num}")
elif rank == 0:
    print("Initializing a new model from scratch")


def fail_now() -> None:
    how = settings["fail_how"]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "exit3":
        print(f"rank {rank}: giving up at iter {iter_num}", file=sys.stderr)
        sys.exit(3)
    raise RuntimeError(f"rank {rank} hit a bad batch at iter {iter_num} \U0001f525")


def main() -> None:
    global iter_num
    while iter_num < int(settings["max_iters"]):
        started = time.time()
        if rank == settings["fail_rank"] and iter_num == settings["fail_iter"]:
            fail_now()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        if world > 1:
            for parameter in model.parameters():
                assert parameter.grad is not None
                dist.all_reduce(parameter.grad)
                parameter.grad /= world
        optimizer.step()
        iter_num += 1
        if rank == 0:
            elapsed = (time.time() - started) * 1000
            print(f"iter {iter_num}: loss {loss.item():.4f}, time {elapsed:.2f}ms, mfu 0.01%")
            if iter_num % int(settings["eval_interval"]) == 0:
                print(f"step {iter_num}: train loss {loss.item():.4f}, val loss {loss.item():.4f}")
                os.makedirs(out_dir, exist_ok=True)
                state = {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "iter_num": iter_num,
                }
                torch.save(state, checkpoint)
    if world > 1:
        dist.destroy_process_group()


if settings["record"]:
    from torch.distributed.elastic.multiprocessing.errors import record

    main = record(main)
main()
