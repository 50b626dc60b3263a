"""rtrain's built-in demo trainer: a tiny character-level language model.

rtrain ships this package to the far host as one file, `demo_trainer.py`: a zip application
(built by `rtrain.daemon.remote.trainer_bundle`) that Python runs directly. It runs there in
the run directory when the user starts a run without a command:

    PYTHON demo_trainer.py --config config.yaml [--dataset FILE.jsonl] [--steps N]

On the far host it stands alone: every module here needs only Python 3.8+ and its standard
library (torch when it imports, optionally), and never imports rtrain; imports between the
modules are relative, so they work both in the zip and inside rtrain. When `import torch`
works it trains with torch (on cuda, mps or cpu); otherwise, or with `backend: python` in
the config or RTRAIN_DEMO_BACKEND=python in the environment, it trains the same model in
pure Python. Both backends print the same lines and write the same files:

    step 10 | loss 3.2145 | lr 0.01      progress, every `log_every` steps
    checkpoints/step-000050.json         every `checkpoint_every` steps (last two kept)
    metrics.jsonl                        one {"step", "loss", "lr"} object per progress line
    lora_model/                          the trained weights, when all steps are done

Started again in the same directory, it resumes from its newest checkpoint. SIGTERM (or
SIGINT) stops it after the current step with a checkpoint, exit code 128 + signal number.
The reference for users is docs/demo-trainer.md in the rtrain repository.
"""
