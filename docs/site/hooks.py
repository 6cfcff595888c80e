"""MkDocs hooks: the site mirrors the repository's layout, so every relative link of the Markdown files works as on a checkout.

MkDocs reads pages from one directory; the documentation of this repository lives
in several (``docs/``, ``models/``, ``benchmarks/``, ``instances/``, the README).
``on_files`` replaces the collected files with the repository's tracked files of
those places, each at its path in the repository (``docs/check.md`` stays
``docs/check.md``); source files that pages link to (``laissez_opt/**.py``, the
schemas, the benchmark scripts) are copied as they are. ``on_post_build`` copies
the MathJax files shipped by the ``jupyter-server-mathjax`` package, so the site
renders its mathematics without any network.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/", "models/", "benchmarks/", "instances/")
STATIC = ("laissez_opt/", "tests/", "pyproject.toml", "Makefile")
SKIP = ("docs/site/",)


def _tracked() -> list[str]:
    """The repository's files: git's list when there is one, else every file under the places above."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split("\n")
        return sorted(p for p in out if p and (ROOT / p).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts)


@event_priority(100)  # before the plugins, so mkdocs-jupyter converts the notebooks listed here
def on_files(files: Files, config) -> Files:
    site = Files([])
    for path in _tracked():
        if path.startswith(SKIP) or "__pycache__" in path or "/.ipynb_checkpoints/" in path:
            continue
        if path.startswith(PAGES) or path.startswith(STATIC):
            site.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    for file in files:  # the theme's and plugins' own files (not pages of docs_dir)
        if not file.src_uri.endswith((".md", ".ipynb")) and site.get_file_from_path(file.src_uri) is None \
                and not (Path(config["docs_dir"]) / file.src_uri).exists():
            site.append(file)
    for asset in ("extra.css", "mathjax-config.js"):
        site.append(File(f"docs/site/{asset}", str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return site


def on_post_build(config) -> None:
    try:
        import jupyter_server_mathjax
    except ImportError:  # the page still reads; formulas stay as TeX source
        return
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = Path(config["site_dir"]) / "assets" / "mathjax"
    if not (target / "MathJax.js").exists():
        shutil.copytree(source, target, dirs_exist_ok=True)
