"""The command line: arguments in, an exit code out."""

from __future__ import annotations

import argparse
import traceback

from .error_file import record_failure
from .messages import EXIT_USAGE, UserError, error, one_line
from .stop_flag import StopFlag
from .training import train


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="demo_trainer.py",
        description="rtrain's demo trainer: a tiny character-level language model.",
    )
    parser.add_argument("--config", help="YAML config (the subset in docs/demo-trainer.md)")
    parser.add_argument(
        "--dataset",
        help='JSONL dataset: {"text": ...} or {"prompt": ..., "completion": ...} per line',
    )
    parser.add_argument("--steps", type=int, help="total steps; overrides the config")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    stop = StopFlag()
    stop.install()
    args = parse_arguments(argv)
    try:
        return train(args, stop)
    except UserError as problem:
        error(str(problem))
        record_failure(f"UserError: {problem}")
        return EXIT_USAGE
    except OSError as problem:  # e.g. a full disk while writing a checkpoint
        error(str(problem))
        record_failure(f"{type(problem).__name__}: {problem}")
        return 1
    except Exception as problem:
        record_failure(one_line(problem), traceback.format_exc())
        raise
