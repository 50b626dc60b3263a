"""The typer CLI. Every command is a thin call to the daemon."""
