"""Running many methods on many instances: comparison, results store, executors, reports."""

from .compare import OBJECTIVES, Comparison, Objective, compare
from .report import markdown_table, write_reports
from .store import RunStore, run_key

__all__ = ["OBJECTIVES", "Comparison", "Objective", "compare", "markdown_table", "write_reports", "RunStore", "run_key"]
