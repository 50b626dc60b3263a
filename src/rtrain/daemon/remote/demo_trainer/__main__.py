"""`python -m` entry point, so the package runs in place as it runs from the shipped zip."""

from __future__ import annotations

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
