"""Family ``gavel``: deep-learning training jobs on K80 / P100 / V100 GPU pools,
with the per-job-type throughputs of the Gavel scheduler's simulator.

Source
------
Narayanan, Santhanam, Kazhamiaka, Phanishayee, Zaharia, "Heterogeneity-Aware
Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020 (Gavel),
and its public simulator, repository ``stanford-futuredata/gavel``.

The throughput table :data:`THROUGHPUTS` holds the isolated (``"null"``,
not co-located) single-GPU throughputs, in training steps (iterations) per
second, of the 26 job types of Gavel's job table (``scheduler/job_table.py``:
ResNet-18 and Transformer at 5 batch sizes, ResNet-50 at 4, the LSTM language
model "LM" at 5, Recommendation at 5, A3C, CycleGAN), read from the file
``scheduler/oracle_throughputs_v2.json`` at commit
``4605a9cb122a6cfb0964ebfa2c6b29c1b578adbd`` (the default ``--throughputs_file``
of some versions of Gavel's trace-driven simulator driver and of its
policy-runtime microbenchmark).  The file's keys are ``"k80"``, ``"v100"`` and
``"p100_unconsolidated"``; the P100 column is the last one (consolidation only
matters for multi-GPU jobs).  The table keeps the file's values; generated
instances round them to 4 decimal places.  The repository's later
``simulation_throughputs.json`` was not reachable, so this is the older
measurement set.

Heterogeneity in this data: the V100/K80 throughput ratio spans 2.0x
(Transformer batch 16; A3C 2.1x) to 11.6x (ResNet-18 batch 256) for 21 of the
26 types; but the five Recommendation types run *slower* on the V100 than on
the K80 in this file (ratios 0.66x to 1.05x), so over all 26 types the span is
0.66x to 11.6x.  The P100 also beats the V100 on a few types (ResNet-18 at
batch 16/32, Transformer at batch 256, Recommendation).  These are the
measurements as published; they are kept, not smoothed.  Use ``models`` to
restrict the mix.

Job sizes (scale factors, here ``demand``) follow Gavel's job generator: 1 GPU
with probability 0.70, 2 with 0.10, 4 with 0.15, 8 with 0.05
(``_generate_scale_factor`` of later versions of ``scheduler/utils.py``; the
same split is in a version of the policy-runtime microbenchmark); only the
distributed models ResNet-18, ResNet-50, Transformer and LM may get more than
one GPU, the others are drawn only with scale factor 1.  With
``priorities=True`` a job gets weight 5 with probability 0.2, as Gavel's
``generate_multi_priority_jobs`` option does.

Encoding
--------
* pools cycle over the three types in the order V100, P100, K80:
  ``V100-0, P100-1, K80-2, V100-3, ...``; each pool's ``count`` is uniform on
  ``1..max_count``; base prices 0; cluster ``"gpu"``;
* each agent is one job; its type is uniform over the allowed job types (given
  its scale factor); it can run on every pool, and its utility on a pool is its
  type's single-GPU throughput on that pool's GPU type (steps/s per device,
  the same number in every round);
* ``demand`` is the scale factor.  The gang constraint of a multi-GPU job (all
  ``k`` GPUs at once, of one type) and the sub-linear multi-GPU scaling that
  Gavel measures are not encoded: a job's utility is linear in the devices it
  gets, up to its demand.

Parameters (keyword, with defaults)
-----------------------------------
max_count : int >= 1, default 8
    Largest number of GPUs in one pool.
multi_gpu : bool, default True
    Draw Gavel's scale factors; ``False`` makes every job single-GPU.
priorities : bool, default False
    Give 20% of the jobs weight 5 (else all weights are 1).
models : list of model names or None, default None
    Restrict the job types to these model families (``"ResNet-18"``,
    ``"ResNet-50"``, ``"Transformer"``, ``"LM"``, ``"Recommendation"``,
    ``"A3C"``, ``"CycleGAN"``); ``None`` keeps all 26 types.
rounds : int >= 1, default 1
    Number of rounds (utilities stay scalar: equal in every round).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._common import (
    Family,
    agent_ids,
    assemble,
    dict_output,
    check_bool,
    check_int,
    cycled_pools,
    format_params,
    round_values,
)

__all__ = ["FAMILY", "THROUGHPUTS", "GPU_TYPES", "DISTRIBUTED", "generate_gavel", "draft_gavel"]

#: GPU types in pool order.
GPU_TYPES = ("V100", "P100", "K80")

#: Job type -> (K80, P100, V100) isolated single-GPU throughput, steps/s, from
#: Gavel's ``scheduler/oracle_throughputs_v2.json`` (see the module docstring).
THROUGHPUTS: dict[str, tuple[float, float, float]] = {
    "ResNet-18 (batch size 16)": (4.795294551566172, 35.869203207990005, 32.353384328946916),
    "ResNet-18 (batch size 32)": (7.175820532538584, 35.82535355155143, 29.947157347732464),
    "ResNet-18 (batch size 64)": (7.052080666695425, 22.30494387033663, 24.093231895382736),
    "ResNet-18 (batch size 128)": (1.8065297880422846, 11.675499943575447, 17.994906225052176),
    "ResNet-18 (batch size 256)": (0.8855799947494726, 7.72278472419796, 10.300256501360458),
    "ResNet-50 (batch size 16)": (2.3005199880283542, 9.052989674171888, 11.396129065315943),
    "ResNet-50 (batch size 32)": (1.236568777004088, 4.888323684976709, 7.787264918596293),
    "ResNet-50 (batch size 64)": (0.6190282202246573, 2.6194694075770055, 4.394774823323071),
    "ResNet-50 (batch size 128)": (0.3472236920519382, 1.5843515911819712, 2.4967655780898292),
    "Transformer (batch size 16)": (5.467379291465242, 9.537249191611776, 11.06408721300405),
    "Transformer (batch size 32)": (3.5074188411966185, 7.8692234803005805, 10.620893339463915),
    "Transformer (batch size 64)": (1.7522265657120206, 5.091830907900463, 8.61775899193302),
    "Transformer (batch size 128)": (0.9815827061299781, 3.0735350560514787, 5.44610521981264),
    "Transformer (batch size 256)": (0.4583310125271042, 1.6776964927127545, 1.5951407072133263),
    "LM (batch size 5)": (25.485501277170847, 90.77591199634988, 109.16661771207029),
    "LM (batch size 10)": (23.794428965833195, 77.0846780814848, 81.65163491883021),
    "LM (batch size 20)": (17.142289692304086, 58.17267240669826, 64.74245099960703),
    "LM (batch size 40)": (11.49965208600937, 35.76638325549232, 45.23737155222392),
    "LM (batch size 80)": (6.054204218128158, 21.157527655800312, 28.239955054085122),
    "Recommendation (batch size 512)": (32.859303327562166, 48.882390510045944, 23.317634950657975),
    "Recommendation (batch size 1024)": (20.04995255198869, 30.74443726150114, 13.2825697082565),
    "Recommendation (batch size 2048)": (10.441219687328084, 16.59663998583255, 7.469632060833725),
    "Recommendation (batch size 4096)": (5.30024719584159, 8.896661974093526, 3.9060505302376054),
    "Recommendation (batch size 8192)": (2.698783123478088, 5.548440840558535, 2.841510364354536),
    "A3C": (3.4387678290723933, 5.681346110543853, 7.175767179667988),
    "CycleGAN": (0.5047705689725351, 2.4026681703106223, 4.426088263367452),
}

#: Models that Gavel's job table marks as distributed (may use > 1 GPU).
DISTRIBUTED = ("ResNet-18", "ResNet-50", "Transformer", "LM")

#: Gavel's scale-factor distribution.
SCALE_FACTORS = (1, 2, 4, 8)
SCALE_PROBS = (0.70, 0.10, 0.15, 0.05)

_COLUMN = {"K80": 0, "P100": 1, "V100": 2}

DEFAULTS = {"max_count": 8, "multi_gpu": True, "priorities": False, "models": None, "rounds": 1}


def _model(job_type: str) -> str:
    return job_type.split(" (")[0]


def _job_types(models: Sequence[str] | None) -> list[str]:
    names = list(THROUGHPUTS)
    if models is None:
        return names
    if isinstance(models, str) or not all(isinstance(x, str) for x in models):
        raise ValueError(f"models must be a list of model names, got {models!r}")
    known = sorted({_model(t) for t in names})
    if not models:
        raise ValueError(f"models must name at least one of: {', '.join(known)}")
    unknown = [x for x in models if x not in known]
    if unknown:
        raise ValueError(f"unknown Gavel model {unknown[0]!r} (known: {', '.join(known)})")
    return [t for t in names if _model(t) in set(models)]


def draft_gavel(
    agents: int,
    pools: int,
    seed: int = 0,
    *,
    max_count: int = 8,
    multi_gpu: bool = True,
    priorities: bool = False,
    models: Sequence[str] | None = None,
    rounds: int = 1,
) -> dict:
    """A ``gavel`` instance as whole columns, a :class:`~laissez_opt.generate._common.Draft` (see the module docstring)."""
    max_count = check_int(max_count, "max_count", 1)
    multi_gpu = check_bool(multi_gpu, "multi_gpu")
    priorities = check_bool(priorities, "priorities")
    rounds = check_int(rounds, "rounds", 1)
    types = _job_types(models)
    n, m = agents, pools
    rng = np.random.default_rng(seed)

    table = round_values(np.array([THROUGHPUTS[t] for t in types]))  # T x 3 (K80, P100, V100)
    distributed = np.array([_model(t) in DISTRIBUTED for t in types])
    multi_types = np.flatnonzero(distributed)

    pool_names, kind = cycled_pools(m, GPU_TYPES)
    counts = rng.integers(1, max_count + 1, size=m)

    if multi_gpu and multi_types.size:
        scale = rng.choice(np.array(SCALE_FACTORS), size=n, p=np.array(SCALE_PROBS))
    else:
        scale = np.ones(n, dtype=np.int64)
    # Gavel samples the job type after the scale factor, keeping only
    # distributed models for multi-GPU jobs; sampling uniformly from the
    # eligible subset is the same distribution.
    job_any = rng.integers(0, len(types), size=n)
    if multi_types.size:
        job_multi = multi_types[rng.integers(0, multi_types.size, size=n)]
    else:
        job_multi = job_any
    job = np.where(scale > 1, job_multi, job_any)
    weight = np.where(rng.random(n) < 0.2, 5.0, 1.0) if priorities else None

    column = np.array([_COLUMN[g] for g in GPU_TYPES])[kind]  # table column of each pool
    util = table[job[:, None], column[None, :]]  # n x m
    mask = np.ones((n, m), dtype=bool)

    pool_records = [
        {"id": pid, "count": k, "cluster": "gpu", "base_price": 0.0}
        for pid, k in zip(pool_names, counts.tolist())
    ]
    names = agent_ids(n)
    agent_fields = ([] if weight is None else [("weight", weight, None)]) + [("demand", scale, None)]
    params = {"max_count": max_count, "multi_gpu": multi_gpu, "priorities": priorities,
              "models": None if models is None else list(models), "rounds": rounds}
    description = (
        f"Seeded random instance, family 'gavel' (laissez_opt.generate): {n} jobs on {m} GPU pools "
        f"cycling V100/P100/K80, seed {seed}, {format_params(params)}. Each agent is a training job of "
        f"one of {len(types)} job types of Gavel (Narayanan et al., 'Heterogeneity-Aware Cluster "
        f"Scheduling Policies for Deep Learning Workloads', OSDI 2020); its utility on a pool is that "
        f"type's isolated single-GPU throughput (training steps per second per device) on the pool's "
        f"GPU type, from the Gavel simulator's scheduler/oracle_throughputs_v2.json "
        f"(stanford-futuredata/gavel, commit 4605a9c), rounded to 4 decimals. Demand is the job's "
        f"scale factor, 1/2/4/8 GPUs with probabilities 0.70/0.10/0.15/0.05 as in Gavel's job "
        f"generator (multi-GPU only for ResNet-18, ResNet-50, Transformer, LM); gang scheduling and "
        f"multi-GPU scaling are not modelled. Pool counts uniform on 1..max_count."
    )
    return assemble(
        family="gavel",
        agents=n,
        pools=m,
        seed=seed,
        description=description,
        rounds=rounds,
        pool_records=pool_records,
        agent_fields=agent_fields,
        agent_names=names,
        pool_names=pool_names,
        mask=mask,
        utility=util,
    )


#: The same, as a plain dict of the instance format.
generate_gavel = dict_output(draft_gavel)

FAMILY = Family(
    name="gavel",
    description="DL training jobs on V100/P100/K80 pools with Gavel's (OSDI 2020) per-type throughputs.",
    func=draft_gavel,
    params=DEFAULTS,
)
