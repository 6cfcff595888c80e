"""Running many methods on many instances: comparison, run store, executors, reports."""

from .compare import OBJECTIVES, Comparison, Objective, compare, parse_run_memory, parse_run_time
from .executors import EXECUTORS, Failure, Limits
from .report import markdown_table, write_reports
from .store import RunStore, RunStoreWarning, run_key

__all__ = ["OBJECTIVES", "Comparison", "Objective", "compare", "markdown_table", "write_reports", "RunStore",
           "RunStoreWarning", "run_key", "parse_run_memory", "parse_run_time", "EXECUTORS", "Failure", "Limits"]
