"""The ``laissez-opt`` command line (thin: parsing and printing only)."""

from .main import cli, main

__all__ = ["cli", "main"]
