"""A results store for long comparisons: one JSON file per finished run.

Runs are keyed by the instance's content hash, the method and its
parameters, so re-running a comparison skips what is already done and a crash
loses only the runs that were in flight.  Each file is written atomically, so
a half-written run never exists.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..io.jsonfile import write_atomic

__all__ = ["RunStore", "run_key"]


def run_key(instance_hash: str, method: str, options: dict) -> str:
    """Stable key of one run: instance content, method, parameters."""
    text = json.dumps({"instance": instance_hash, "method": method, "options": options}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


class RunStore:
    """Finished runs under ``directory/<key>.json``."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()

    def get(self, key: str) -> dict | None:
        path = self._path(key)
        try:
            return json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except json.JSONDecodeError:
            # Cannot happen with atomic writes; treat as missing so the run is redone.
            return None

    def put(self, key: str, row: dict) -> None:
        write_atomic(self._path(key), json.dumps(row, sort_keys=True, allow_nan=True) + "\n")

    def keys(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob("*.json"))
