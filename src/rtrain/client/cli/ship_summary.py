"""What `start` says about what it shipped: a few lines, however many files a project has.

One line for the files the host already held, one for what was shipped and sent, then what
the code directory's ignore rules left home (the first paths, with the rule that matched),
the links shipped as links, and a warning for files that look like secrets. `--verbose`
lists every file; `--json` prints all of it.
"""

from __future__ import annotations

from typing import Any

import typer

from rtrain.protocol.byte_sizes import human_bytes

from .output import note

# Paths named in a line before it says "and N more".
FIRST_FEW = 3

IncludeOpt: Any = typer.Option(
    [],
    "--include",
    metavar="PATTERN",
    help="Ship what this pattern (gitignore syntax) matches in the code directory, although "
    "its ignore rules leave it home (repeatable).",
)
FollowLinksOpt: Any = typer.Option(
    False,
    "--follow-links",
    help="Ship what the code directory's links that leave it point to (by default such a "
    "link ships as a link).",
)


def print_ship_summary(result: Any, host: str, *, verbose: bool) -> None:
    """The start's lines about its inputs, on stderr (`result`: a StartResult as received)."""
    shipped = list(result.shipped)
    held = [f for f in shipped if f.how != "sent"]
    if verbose:
        for f in shipped:
            if f.how == "sent":
                note(f"  {f.path}  {human_bytes(f.size)}, {human_bytes(f.sent_bytes)} sent")
            else:
                note(f"  {f.path}  {human_bytes(f.size)}, already on {host} ({f.how})")
    if held:
        note(f"{_files(len(held))} already on {host}, 0 B sent")
    total = sum(f.size for f in shipped)
    note(
        f"shipped {_files(len(shipped))} ({human_bytes(total)}), "
        f"{human_bytes(result.uploaded_bytes)} sent, every sha256 checked on {host}"
    )
    code = result.code
    if code is None:
        return
    if code.left_home_files:
        rules = code.rules or "the ignore rules"
        paths = [f"{h.path} ({h.rule})" for h in code.left_home]
        some = "at least " if any(h.at_least for h in code.left_home) else ""
        note(
            f"left home by {rules}: {some}{_files(code.left_home_files)} "
            f"({human_bytes(code.left_home_bytes)}): {_first_few(paths)}; "
            "--include PATTERN ships one anyway"
        )
    outside = [k for k in code.links if k.outside]
    if outside:
        note(
            f"shipped as links, not what they point to (outside the code directory): "
            f"{_first_few([f'{k.path} -> {k.target}' for k in outside])}; "
            "--follow-links ships their targets"
        )
    if code.secrets:
        note(
            f"warning: shipped {_files(len(code.secrets))} that look like secrets: "
            f"{_first_few(list(code.secrets))}; list them in .rtrainignore to keep them "
            "home, or --include them to ship them without this warning"
        )


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _first_few(items: list[str]) -> str:
    shown = ", ".join(items[:FIRST_FEW])
    more = len(items) - FIRST_FEW
    return f"{shown} and {more} more" if more > 0 else shown
