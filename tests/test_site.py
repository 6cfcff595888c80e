"""The documentation site builds with ``mkdocs build --strict`` (broken links fail) and documents every public name.

The ``docs`` extra is part of ``make test``'s install, so the build runs in CI; a
missing MkDocs is an error here, not a skip.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import laissez_opt as lo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "site"))
from griffe_doctests import fence_doctests  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    return out


def test_every_public_name_is_in_the_api_reference(site):
    html = (site / "docs" / "api.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="(laissez_opt[\w.]*)"', html))
    missing = [n for n in lo.__all__ if not any(i == f"laissez_opt.{n}" or i.endswith("." + n) for i in ids)]
    assert not missing, f"not in the API reference: {missing}"
    assert "language-pycon" in html or "highlight" in html  # doctest examples are code blocks


def test_pages_keep_the_repository_layout_and_render_maths_offline(site):
    for page in ("index.html", "docs/getting-started.html", "docs/import.html", "models/welfare.html",
                 "docs/notebooks/first-solve.html", "benchmarks/results/heuristics_gap.html"):
        assert (site / page).is_file(), page
    welfare = (site / "models" / "welfare.html").read_text(encoding="utf-8")
    assert '<div class="arithmatex">\\[' in welfare and "&amp;" in welfare  # TeX as text, for MathJax
    assert "assets/mathjax/MathJax.js" in welfare and (site / "assets" / "mathjax" / "MathJax.js").is_file()
    assert "cdn" not in welfare.lower().split("mathjax")[0][-200:]
    notebook = (site / "docs" / "notebooks" / "first-solve.html").read_text(encoding="utf-8")
    assert "data:image/png;base64" in notebook  # the stored outputs, plots included


def test_doctest_blocks_are_fenced():
    text = "Intro\n\n>>> f([0, 1])\n[0, 1]\n\nMore\n```python\n>>> kept\n```"
    assert fence_doctests(text) == "Intro\n\n```pycon\n>>> f([0, 1])\n[0, 1]\n```\n\nMore\n```python\n>>> kept\n```"
