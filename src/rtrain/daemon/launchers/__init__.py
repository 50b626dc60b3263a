"""How a run is run on its host (a launcher), apart from how the host is reached (a transport)."""
