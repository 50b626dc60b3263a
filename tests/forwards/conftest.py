"""The forwards tests run in the CLI tests' world (tests/cli/conftest.py): the `rtrain`
command as a subprocess, an isolated daemon, the real test sshds."""

from tests.cli.conftest import cli  # noqa: F401  (a fixture, used by name)
