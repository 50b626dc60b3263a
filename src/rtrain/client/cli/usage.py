"""Usage lines as people write them: `rtrain status [OPTIONS] HOST RUN`, and options grouped.

typer wraps a required argument in braces (`{HOST}`), which reads like a shell placeholder
or a set to choose from; every command uses this class to leave them out. The help is plain
text (no rich, for start-up time), so the options a command puts in a panel of their own
(`rich_help_panel`: a launcher's options under `rtrain start`) get a section of their own here.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


class PlainUsage(TyperCommand):
    # typer's Context is its own copy of click's; Any keeps mypy from minding which.
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            default = "Arguments" if param.param_type_name == "argument" else "Options"
            panel = getattr(param, "rich_help_panel", None) or default
            sections.setdefault(panel, []).append(record)
        # Arguments, then the options every run takes, then each panel in the order met.
        ordered = sorted(
            sections,
            key=lambda name: (
                ("Arguments", "Options").index(name) if name in ("Arguments", "Options") else 2
            ),
        )
        for name in ordered:
            with formatter.section(name):
                formatter.write_dl(sections[name])
