"""Versions: of the rtrain distribution and of the wire protocol it speaks."""

RTRAIN_VERSION = "0.1.0"

# MAJOR changes break clients; MINOR adds methods or optional fields.
PROTOCOL_VERSION = "2.0"


def protocol_major(version: str) -> int | None:
    """The major number of a "MAJOR.MINOR" version string, or None when it is not one."""
    head, _, _ = version.partition(".")
    return int(head) if head.isdigit() else None
