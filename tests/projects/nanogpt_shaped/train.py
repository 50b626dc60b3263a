"""A trainer shaped like nanoGPT's train.py, for the suite: its print format and its resume
rule (a checkpoint is read only when told `--init_from=resume`; otherwise training starts
from scratch and the checkpoint is overwritten). No model: the loss is a falling number.

    python train.py --max_iters=20 [--init_from=resume] [--eval_interval=5] [--sleep=0.01]
"""

import json
import math
import os
import sys
import time
from typing import Any

config: dict[str, Any] = {"max_iters": 20, "init_from": "scratch", "eval_interval": 5, "sleep": 0.0}
for arg in sys.argv[1:]:
    # nanoGPT's configurator: --key=value overrides a global of the same name.
    key, _, value = arg.removeprefix("--").partition("=")
    if key not in config:
        sys.exit(f"Unknown config key: {key}")
    config[key] = type(config[key])(value)

CKPT = os.path.join("out", "ckpt.json")
iter_num = 0
if config["init_from"] == "resume":
    with open(CKPT) as f:
        iter_num = json.load(f)["iter_num"]
    print(f"Resuming training from out (iter {iter_num})", flush=True)
else:
    print("Initializing a new model from scratch", flush=True)

os.makedirs("out", exist_ok=True)
while iter_num < config["max_iters"]:
    iter_num += 1
    loss = 4.0 * math.exp(-iter_num / 20)
    print(f"iter {iter_num}: loss {loss:.4f}, time 14.01ms, mfu 0.01%", flush=True)
    if iter_num % config["eval_interval"] == 0:
        print(f"step {iter_num}: train loss {loss:.4f}, val loss {loss * 1.02:.4f}", flush=True)
        with open(CKPT + ".tmp", "w") as f:
            json.dump({"iter_num": iter_num}, f)
        os.replace(CKPT + ".tmp", CKPT)
        print("saving checkpoint to out", flush=True)
    time.sleep(config["sleep"])
