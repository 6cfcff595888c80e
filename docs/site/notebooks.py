"""Execute the worked notebooks of docs/notebooks/ and store their outputs (``make notebooks``).

``python docs/site/notebooks.py`` runs every notebook from the repository root
with nbclient and writes it back with its outputs, which the site shows as they
are (nothing runs while the site builds). ``tests/test_notebooks.py`` executes them
the same way, so a notebook that stops working fails the tests.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))


def execute(path: Path, timeout: int = 120):
    """Run the notebook at ``path`` in a fresh kernel from the repository root; return it with outputs."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    return nb


def main(argv: list[str]) -> int:
    import nbformat

    for path in [Path(a) for a in argv] or NOTEBOOKS:
        start = time.perf_counter()
        nb = execute(path)
        for cell in nb.cells:  # stable files: no execution timestamps
            cell.get("metadata", {}).pop("execution", None)
        nbformat.write(nb, path)
        print(f"{path.relative_to(ROOT)}: executed in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
