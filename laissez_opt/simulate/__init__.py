"""Multi-round simulation: queues, arrivals and deadlines, every method as a per-round policy.

One engine (:mod:`~laissez_opt.simulate.engine`) runs rounds of: drops, arrivals, the
round's view of the queues (:mod:`~laissez_opt.simulate.view`), a policy's decision
(:mod:`~laissez_opt.simulate.policies`: every registered method, ``min_backlog``, user
policies), placement on devices and service by a balancer
(:mod:`~laissez_opt.simulate.execution`, :mod:`~laissez_opt.simulate.kernel`), and
records (:mod:`~laissez_opt.simulate.metrics`).  :func:`simulate` runs every policy on
every seed in parallel with a resumable run store (:mod:`~laissez_opt.simulate.sweep`);
configurations are JSON files (:mod:`~laissez_opt.simulate.config`) or presets
(:mod:`~laissez_opt.simulate.presets`, the thesis's chapter-5 evaluation); results
summarise over seeds with confidence intervals (:mod:`~laissez_opt.simulate.summary`)
and write CSV, Markdown and PNG files (:mod:`~laissez_opt.simulate.report`).  See
``docs/simulate.md``.

>>> import laissez_opt as lo
>>> lo.simulate(preset="thesis-r1", progress=False).run("min_backlog", 0).rounds["backlog_work"]
[0.0, 20.0]
"""

from .config import PolicySpec, SimulationConfig, Workload, config_from_dict, load_config
from .engine import RunRecord, prepare, run
from .policies import Decision, Policy, RoundView, register_policy, registered_policies, unregister_policy
from .presets import PRESETS, preset_dict
from .results import SimulationResult
from .sweep import build_config, simulate

__all__ = [
    "simulate",
    "build_config",
    "SimulationConfig",
    "SimulationResult",
    "Workload",
    "PolicySpec",
    "config_from_dict",
    "load_config",
    "RunRecord",
    "prepare",
    "run",
    "Policy",
    "Decision",
    "RoundView",
    "register_policy",
    "unregister_policy",
    "registered_policies",
    "PRESETS",
    "preset_dict",
]
