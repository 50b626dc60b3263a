"""Reaching hosts: OpenSSH ControlMasters, and the transports that run scripts and move files."""
