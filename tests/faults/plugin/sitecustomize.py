"""Registers the fault-injection test methods in every Python process started with this
directory on ``PYTHONPATH`` and ``LAISSEZ_FAULT_METHODS=1`` in its environment: the command
line under test and its worker processes.  Both are needed, so that no other process that
happens to import this module gets methods that stall or exhaust memory."""

import os

if os.environ.get("LAISSEZ_FAULT_METHODS") == "1":
    try:
        import fault_methods
    except ImportError:  # laissez_opt not importable in this interpreter: nothing to register
        pass
    else:
        fault_methods.register()
