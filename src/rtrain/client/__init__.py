"""rtrain's clients: the synchronous daemon client, the Python API and the CLI."""
