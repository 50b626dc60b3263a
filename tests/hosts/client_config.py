"""The ssh client config (`ssh -F`) and known_hosts file the test hosts hand to the product.

Host-key checking stays on: every alias trusts exactly the keys in our known_hosts, which the
product must never weaken.
"""

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Alias:
    name: str
    port: int
    user: str
    options: Mapping[str, str] = field(default_factory=dict)


class ClientConfig:
    """Holds the aliases and rewrites both files, whole, after every change."""

    def __init__(self, base: Path, identity_file: Path, host_public_key: str) -> None:
        self.config_path = base / "ssh_config"
        self.known_hosts_path = base / "known_hosts"
        self.identity_file = identity_file
        self.host_public_key = host_public_key
        self._aliases: dict[str, Alias] = {}
        self._lock = threading.Lock()

    def add(self, alias: Alias) -> None:
        with self._lock:
            self._aliases[alias.name] = alias
            self._write()

    @property
    def aliases(self) -> dict[str, Alias]:
        return dict(self._aliases)

    def _write(self) -> None:
        blocks = []
        for alias in self._aliases.values():
            lines = [
                f"Host {alias.name}",
                "  HostName 127.0.0.1",
                f"  Port {alias.port}",
                f"  User {alias.user}",
                f"  IdentityFile {self.identity_file}",
                "  IdentitiesOnly yes",
                f"  UserKnownHostsFile {self.known_hosts_path}",
                "  GlobalKnownHostsFile /dev/null",
                "  StrictHostKeyChecking yes",
                *(f"  {key} {value}" for key, value in alias.options.items()),
            ]
            blocks.append("\n".join(lines) + "\n")
        ports = sorted({alias.port for alias in self._aliases.values()})
        known = "".join(f"[127.0.0.1]:{port} {self.host_public_key}\n" for port in ports)
        _replace(self.known_hosts_path, known)
        _replace(self.config_path, "\n".join(blocks))


def _replace(path: Path, text: str) -> None:
    # ssh refuses a config that others may write; 0600 and one rename keep it valid throughout.
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
