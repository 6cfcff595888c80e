"""The machine and library versions a benchmark report records (shared by the benchmark scripts)."""

from __future__ import annotations

import os
import platform
from importlib import metadata


def version(name: str) -> str:
    """The installed version of distribution ``name``, or ``"not installed"``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(*packages: str) -> dict:
    """CPU count, Python, system and the versions of ``packages``, as a report's ``machine`` entry."""
    return {"cpu_count": os.cpu_count(), "python": platform.python_version(),
            "system": f"{platform.system()} {platform.machine()}", **{name: version(name) for name in packages}}
