"""Makes the bench script importable by its tests: it lives beside them, not in a package."""

from __future__ import annotations

import sys
from pathlib import Path

# pytest runs with --import-mode=importlib, which leaves sys.path alone.
sys.path.insert(0, str(Path(__file__).resolve().parent))
