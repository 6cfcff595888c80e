"""Named simulation configurations: the thesis's evaluation (R5) and its worked example (R1).

Thesis 002, chapter 5 (``reproduce.md`` R5): 20 agents share 40 Gemmini accelerators
(two pools of 20: 2 GHz and 3 GHz; Table 5.1 throughputs, one inference workload per
agent drawn with the seed, family ``gemmini``); Poisson arrivals with base rate 40 jobs
per round scaled by weight; offered load ("queue utility") relative to the weighted
equal share; each agent spreads its jobs over its accelerators with a
power-of-two-choices balancer; jobs expire after a deadline; 300 rounds; 10 seeds.
The weight setups of section 5.3, each at the load of the thesis's quoted claim:

==============================  ===========================================  =========
preset                          weights                                      load
==============================  ===========================================  =========
``thesis-r5-equal``             all 1                                        60%
``thesis-r5-1-2``               half 1, half 2                               60%
``thesis-r5-1-2-4``             50% 1, 25% 2, 25% 4                          70%
``thesis-r5-1-2-8``             50% 1, 25% 2, 25% 8                          50%
``thesis-r5-mixed-a``           50% 1, 25% 2, 25% 4 (Figure 5.14)            70/50/40%
``thesis-r5-mixed-b``           50% 1, 25% 2, 25% 4 (Figure 5.15)            40/50/70%
==============================  ===========================================  =========

(The captions of Figures 5.14 and 5.15 say ``w = 8`` for the last quarter while their
own load clause and the text say ``w = 4``; the presets follow the text.)

Policies: ``mtf`` (actor-critic thresholds that learn across rounds), ``themis``
(finish-time fairness re-solved every round), ``gandiva_fair`` (stride scheduling), and
the exact references ``welfare`` (per-round weighted welfare), ``leximin`` (``maxmin``,
fractional, per round) and ``min_backlog`` (per-round minimum weighted backlog); the
offline hindsight bound is computed for every seed.  Choices the thesis leaves open
(deadline 5 rounds, the meaning of the load, the balancer, the token pool ``T = 40``,
the demand rule) are documented in ``docs/simulate.md`` with their sensitivity.

``thesis-r1``: the two-agent example of section 2.2.3 (arrivals 150/275 then 370/280,
utility minus the backlog) under ``time_equal`` and ``min_backlog``, pooled service.

Example
-------
>>> sorted(PRESETS)[:3]
['hotos25-section5', 'thesis-r1', 'thesis-r5-1-2']
>>> preset_dict("thesis-r5-equal")["workload"]["load"]
0.6
"""

from __future__ import annotations

import copy

from ..errors import InputError

__all__ = ["PRESETS", "preset_dict", "R5_POLICIES", "R5_SETUPS"]

#: The R5 policies: MTF with learned thresholds, the two baselines, the exact references.
R5_POLICIES = [
    {"name": "mtf", "method": "mtf", "options": {"threshold": "actor_critic"}},
    {"name": "themis", "method": "themis", "options": {}},
    {"name": "gandiva_fair", "method": "gandiva_fair", "options": {}},
    {"name": "welfare", "method": "welfare", "options": {}},
    {"name": "leximin", "method": "maxmin", "options": {"fractional": True}},
    {"name": "min_backlog", "method": "min_backlog", "options": {}},
]

#: Setup name -> (gemmini weight setup, load, description).
R5_SETUPS = {
    "equal": ("equal", 0.6, "all weights 1, load 60% (thesis Figures 5.2-5.3)"),
    "1-2": ("1-2", 0.6, "half weight 1, half weight 2, load 60% (Figures 5.4-5.6)"),
    "1-2-4": ("1-2-4", 0.7, "50% weight 1, 25% weight 2, 25% weight 4, load 70% (Figures 5.7-5.9)"),
    "1-2-8": ("1-2-8", 0.5, "50% weight 1, 25% weight 2, 25% weight 8, load 50% (Figures 5.10-5.12)"),
    "mixed-a": ("1-2-4", {"by_weight": {"1": 0.7, "2": 0.5, "4": 0.4}},
                "weights 1/2/4 (50/25/25%) with loads 70/50/40% (Figure 5.14)"),
    "mixed-b": ("1-2-4", {"by_weight": {"1": 0.4, "2": 0.5, "4": 0.7}},
                "weights 1/2/4 (50/25/25%) with loads 40/50/70% (Figure 5.15)"),
}


def _r5(setup: str) -> dict:
    weights, load, text = R5_SETUPS[setup]
    return {
        "format": "laissez-opt/simulation",
        "version": 1,
        "name": f"thesis-r5-{setup}",
        "description": f"Thesis 002 chapter 5 (R5): 20 agents, 40 Gemmini accelerators, {text}; Poisson arrivals, "
                       "base rate 40 jobs per round scaled by weight; deadline 5 rounds; power-of-two-choices balancer; "
                       "300 rounds.",
        "generate": {"family": "gemmini", "agents": 20, "pools": 2, "seed": None, "params": {"weights": weights}},
        "rounds": 300,
        "seeds": 10,
        "policies": copy.deepcopy(R5_POLICIES),
        "workload": {"arrivals": "poisson", "base_rate": 40, "rate_scaling": "weight", "load": load,
                     "load_reference": "equal_share", "size_distribution": "fixed", "deadline": 5},
        "balancer": "power_of_two",
        "demand": "clear",
        "utility": "throughput",
        "hindsight": True,
    }


def _r1_instance() -> dict:
    """``instances/thesis-r1-fair-vs-efficient.json`` (Tables 2.1 and 2.2), inline so the preset needs no file."""
    throughput = {"A1": (100.0, 120.0, 150.0, 200.0), "A2": (200.0, 100.0, 50.0, 200.0)}
    return {
        "format": "laissez-opt/instance", "version": 1, "name": "thesis-r1-fair-vs-efficient", "rounds": 2,
        "pools": [{"id": f"R{k}"} for k in range(1, 5)],
        "agents": [{"id": "A1", "arrivals": [150.0, 370.0]}, {"id": "A2", "arrivals": [275.0, 280.0]}],
        "edges": [{"agent": a, "pool": f"R{k + 1}", "utility": u} for a, row in throughput.items()
                  for k, u in enumerate(row)],
    }


def _r1() -> dict:
    return {
        "format": "laissez-opt/simulation",
        "version": 1,
        "name": "thesis-r1",
        "description": "Thesis 002 section 2.2.3 (R1): two agents, four accelerators, two rounds, arrivals 150/275 then "
                       "370/280; utility minus the backlog (eq. 3.2); the fair scheduler (time_equal) against the exact "
                       "per-round minimum backlog; each agent's devices drain one queue (pooled).",
        "instance": _r1_instance(),
        "rounds": 2,
        "seeds": 1,
        "policies": ["time_equal", "min_backlog"],
        "workload": {"arrivals": "instance"},
        "balancer": "pooled",
        "utility": "negative_backlog",
        "hindsight": True,
    }


#: Preset name -> one-line description.
PRESETS: dict[str, str] = {"thesis-r1": "thesis section 2.2.3 worked example: time_equal vs min_backlog, 2 rounds"}
PRESETS.update({f"thesis-r5-{k}": f"thesis chapter 5: {v[2]}" for k, v in R5_SETUPS.items()})
PRESETS["hotos25-section5"] = ("LaissezCloud (HotOS'25) section 5: the market run of Apps A and B on one A10, "
                               "A10 price 0.606 -> 0.686 (paper: 0.687) -> 0.652 -> 0.606")


def preset_dict(name: str) -> dict:
    """The configuration of preset ``name`` in the file format.

    >>> preset_dict("thesis-r1")["policies"]
    ['time_equal', 'min_backlog']
    """
    if name == "thesis-r1":
        return _r1()
    if name == "hotos25-section5":
        from .market.scenarios import section5_config

        return section5_config()
    if name.startswith("thesis-r5-") and name[len("thesis-r5-"):] in R5_SETUPS:
        return _r5(name[len("thesis-r5-"):])
    raise InputError(f"unknown preset {name!r}; known: {', '.join(sorted(PRESETS))}", path="preset")
