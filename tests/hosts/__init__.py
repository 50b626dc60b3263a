"""The test suite's own SSH hosts: real sshd processes on 127.0.0.1 (see README.md)."""

from tests.hosts.proxy import TcpProxy
from tests.hosts.session import TestHosts, start_test_hosts
from tests.hosts.user_accounts import (
    GPU_USER,
    GPULOAD_USER,
    GPUSHARE_USER,
    NOGPU_USER,
    NOISY_USER,
)

__all__ = [
    "GPU_USER",
    "GPULOAD_USER",
    "GPUSHARE_USER",
    "NOGPU_USER",
    "NOISY_USER",
    "TcpProxy",
    "TestHosts",
    "start_test_hosts",
]
