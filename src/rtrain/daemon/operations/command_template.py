"""A command template: the words of a start's or a restart's command, with placeholders.

`{python}`, `{config}`, `{dataset}`, `{run_dir}` and `{gpus}` are filled in inside any word;
the word `{torchrun}` becomes the run's python running torchrun for `{gpus}` ranks. A start
checks its template before anything reaches the host and fills it once its run directory is
known; a restart given a new command does the same with what the run recorded.
"""

from __future__ import annotations

import re

from rtrain.daemon.launchers.torchrun.launcher import torchrun_words
from rtrain.protocol.errors import Kind, app_error

CONFIG_NAME = "config.yaml"
PLACEHOLDERS = ("{python}", "{config}", "{dataset}", "{run_dir}", "{gpus}", "{torchrun}")
TORCHRUN_WORD = "{torchrun}"
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def check_template(template: list[str] | None, has_dataset: bool, has_config: bool) -> None:
    if template is None:
        if not has_config:
            raise app_error(
                Kind.INVALID_COMMAND,
                "rtrain's demo trainer needs a config (-c config.yaml); or give your own "
                "command after `--`.",
            )
        return
    if not template or not template[0]:
        raise app_error(Kind.INVALID_COMMAND, "the command is empty.")
    check_words(template, has_dataset, has_config)


def check_words(template: list[str], has_dataset: bool, has_config: bool) -> None:
    if not has_dataset and any("{dataset}" in word for word in template):
        raise app_error(
            Kind.INVALID_COMMAND, "the command uses {dataset} but no dataset was given (--dataset)."
        )
    if not has_config and any("{config}" in word for word in template):
        raise app_error(
            Kind.INVALID_COMMAND, "the command uses {config} but no config was given (-c)."
        )
    for word in template:
        # Only `{name}` is taken for a placeholder: braces of code in the command (a dict in
        # `python -c`, JSON) are the user's own text.
        unknown = [p for p in _PLACEHOLDER.findall(word) if p not in PLACEHOLDERS]
        if TORCHRUN_WORD in word and word != TORCHRUN_WORD:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"{{torchrun}} must be a word of its own (it becomes several), not {word!r}.",
            )
        if unknown:
            raise app_error(
                Kind.INVALID_COMMAND,
                f"unknown placeholder in {word!r}; known: " + ", ".join(PLACEHOLDERS) + ".",
            )


def expand(
    template: list[str],
    *,
    python: str,
    dataset: str | None,
    run_dir: str,
    gpus: int,
    relay: bool = False,
) -> list[str]:
    """The template's words with the placeholders filled. `relay`: `{torchrun}` runs under
    rtrain's relay of the ranks' lines (a run on the host itself, not a batch job's)."""
    values = {
        "{python}": python,
        "{config}": CONFIG_NAME,
        "{run_dir}": run_dir,
        "{gpus}": str(gpus),
        "{dataset}": dataset or "",
    }
    words: list[str] = []
    for word in template:
        if word == TORCHRUN_WORD:
            words += torchrun_words(python, gpus, run_dir if relay else None)
            continue
        for placeholder, value in values.items():
            word = word.replace(placeholder, value)
        words.append(word)
    return words
