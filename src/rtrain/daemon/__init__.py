"""The rtrain daemon: owns SSH connections and the run registry; serves JSON-RPC on a socket."""
