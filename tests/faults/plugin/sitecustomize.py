"""Registers the fault-injection test methods in every Python process started with this
directory on ``PYTHONPATH``: the command line under test and its worker processes."""

try:
    import fault_methods
except ImportError:  # laissez_opt not importable in this interpreter: nothing to register
    pass
else:
    fault_methods.register()
