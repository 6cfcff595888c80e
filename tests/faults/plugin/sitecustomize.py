"""Registers the fault-injection test methods in every Python process started with this
directory on ``PYTHONPATH`` and ``LAISSEZ_FAULT_METHODS=1`` in its environment: the command
line under test and its worker processes.  Both are needed, so that no other process that
happens to import this module gets methods that stall or exhaust memory.  With
``LAISSEZ_FAULT_BREAK_STARTUP=1`` the process exits at once, as a broken environment would."""

import os

if os.environ.get("LAISSEZ_FAULT_BREAK_STARTUP") == "1":
    # A worker whose environment is broken: it dies before it can report ready.
    os._exit(3)

if os.environ.get("LAISSEZ_FAULT_METHODS") == "1":
    try:
        import fault_methods
    except ImportError:  # laissez_opt not importable in this interpreter: nothing to register
        pass
    else:
        fault_methods.register()
