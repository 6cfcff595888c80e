"""What the benchmark scripts share: the machine record of a report and writing a report."""

from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path

from laissez_opt.io.jsonfile import write_atomic


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


def write_report(path: Path, text: str) -> None:
    """Write a report file atomically (readers see the old report or the whole new one), folders included."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)


def write_results(out_dir: Path, name: str, payload: dict, lines: list[str]) -> None:
    """Write ``name.json`` (``payload``) and ``name.md`` (the table ``lines``) atomically into ``out_dir``, and
    print the table."""
    write_report(Path(out_dir) / f"{name}.json", json.dumps(payload, indent=1))
    write_report(Path(out_dir) / f"{name}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
