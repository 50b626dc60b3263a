"""Usage lines as people write them: `rtrain status [OPTIONS] HOST RUN`.

typer wraps a required argument in braces (`{HOST}`), which reads like a shell placeholder
or a set to choose from; every command uses this class to leave them out.
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
