"""How the daemon reaches a host: the transport every operation is given (run a script,
stream bytes), and the one for `local`, which needs no SSH; the SSH ones are in ssh/."""
