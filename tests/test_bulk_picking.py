"""Bulk hand-outs give the same devices as handing them out one at a time.

``partition_picks`` (fixed and dynamic partition) and ``stride_round``
(``gandiva_fair``) hand out repeated turns in bulk so that pools of billions of
devices take as long as pools of ten.  The references here are the plain
device-by-device loops the papers describe, written with ``Picker.pick`` only.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laissez_opt as lo
from laissez_opt.heuristics._baseline_common import UNBOUNDED, Picker, apportion_in_order, partition_picks
from laissez_opt.heuristics.gandiva_fair import stride_round


def reference_partition(picker, members, quotas, caps, picking, work_conserving):
    taken, held = Counter(), dict.fromkeys(members, 0)

    def draft(queue, target):
        while queue and picker.left:
            keep = []
            for i in queue:
                if not picker.left:
                    break
                e = picker.pick(i)
                if e < 0:
                    continue
                taken[e] += 1
                held[i] += 1
                if held[i] < target(i):
                    keep.append(i)
            queue = keep

    quota = lambda i: min(quotas.get(i, 0), caps[i])  # noqa: E731
    if picking == "serial":
        for i in members:
            while held[i] < quota(i) and picker.left:
                e = picker.pick(i)
                if e < 0:
                    break
                taken[e] += 1
                held[i] += 1
    else:
        draft([i for i in members if quota(i) > 0], quota)
    before = sum(taken.values())
    if work_conserving:
        draft([i for i in members if held[i] < caps[i]], lambda i: caps[i])
    return taken, sum(taken.values()) - before


def reference_stride(picker, members, passes, stride, caps):
    taken, held = Counter(), dict.fromkeys(members, 0)
    heap = [(passes[i], i) for i in members]
    heapq.heapify(heap)
    while heap and picker.left:
        p, i = heapq.heappop(heap)
        e = picker.pick(i)
        if e < 0:
            continue
        taken[e] += 1
        held[i] += 1
        passes[i] = p + stride[i]
        if held[i] < caps[i]:
            heapq.heappush(heap, (passes[i], i))
    return taken


@st.composite
def rounds_of_picking(draw):
    n = draw(st.integers(1, 6))
    m = draw(st.integers(1, 4))
    counts = [draw(st.one_of(st.integers(1, 12), st.integers(13, 400))) for _ in range(m)]
    pools = [lo.Pool(f"P{c}", count=k) for c, k in enumerate(counts)]
    agents = [lo.Agent(f"a{i}", weight=draw(st.sampled_from([1, 1, 2, 3, 0.5])),
                       demand=draw(st.one_of(st.none(), st.integers(0, 300)))) for i in range(n)]
    edges = [lo.Edge(f"a{i}", f"P{c}", draw(st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0])))
             for i in range(n) for c in range(m) if draw(st.booleans())]
    inst = lo.Instance(pools, agents, edges)
    order = draw(st.permutations(list(range(n))))
    return inst, order


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=rounds_of_picking(), picking=st.sampled_from(["serial", "draft"]), conserving=st.booleans())
def test_partition_picks_equal_the_device_by_device_loop(case, picking, conserving):
    inst, members = case
    caps = [UNBOUNDED if a.demand is None else int(a.demand) for a in inst.agents]
    ints = [max(1, int(2 * a.weight)) for a in inst.agents]
    score = inst.edge_utility[:, 0]
    quotas = apportion_in_order(Picker(inst, score).usable, ints, members)
    bulk = Picker(inst, score)
    picks, filled = partition_picks(bulk, members, quotas, caps, picking=picking, work_conserving=conserving)
    one = Picker(inst, score)
    taken, ref_filled = reference_partition(one, members, quotas, caps, picking, conserving)
    got = Counter()
    for _, e, k in picks:
        got[e] += k
    assert +got == +taken and filled == ref_filled
    assert bulk.rem == one.rem and bulk.left == one.left


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=rounds_of_picking(), data=st.data())
def test_stride_round_equals_the_device_by_device_loop(case, data):
    inst, members = case
    caps = [UNBOUNDED if a.demand is None else int(a.demand) for a in inst.agents]
    stride = [data.draw(st.sampled_from([1, 2, 3, 6, 7])) for _ in members]
    passes = [data.draw(st.integers(0, 20)) for _ in members]
    score = inst.edge_utility[:, 0]
    bulk, one = Picker(inst, score), Picker(inst, score)
    bulk_passes, ref_passes = list(passes), list(passes)
    members = sorted(i for i in members if caps[i] > 0)  # as gandiva_fair calls it
    picks = stride_round(bulk, members, bulk_passes, stride, caps)
    taken = reference_stride(one, members, ref_passes, stride, caps)
    got = Counter()
    for _, e, k in picks:
        got[e] += k
    assert +got == +taken
    assert bulk_passes == ref_passes and bulk.rem == one.rem


@pytest.mark.parametrize("method", ["fixed_partition", "dynamic_partition", "gandiva_fair"])
def test_pools_of_billions_of_devices_are_handed_out_at_once(method):
    # Found by the fuzz of test_adversarial: these ran into their time limit handing out 2^31 devices one by one.
    inst = lo.Instance([lo.Pool("P", count=2**31 - 1), lo.Pool("Q", count=5)],
                       [lo.Agent(f"a{i}", weight=1 + i, demand=None if i else 10**9) for i in range(3)],
                       [lo.Edge(f"a{i}", "P", 1.0) for i in range(3)] + [lo.Edge("a0", "Q", 2.0)], rounds=3)
    assert lo.estimate(inst, method).steps < 1e6
    start = time.perf_counter()
    result = lo.solve(inst, method, time_limit=10)
    assert result.verified and time.perf_counter() - start < 5
    total = sum(a["amount"] for a in result.allocation if a["round"] == 0)
    assert total == 2**31 - 1 + 5


def test_weights_share_a_vast_pool_in_proportion():
    inst = lo.Instance([lo.Pool("P", count=15 * 10**8)], [lo.Agent("a", weight=1), lo.Agent("b", weight=2)],
                       [lo.Edge("a", "P", 1.0), lo.Edge("b", "P", 1.0)])
    for method in ("fixed_partition", "dynamic_partition", "gandiva_fair"):
        u = lo.solve(inst, method).utilities
        assert np.isclose(u["a"], 5 * 10**8) and np.isclose(u["b"], 10**9), (method, u)
