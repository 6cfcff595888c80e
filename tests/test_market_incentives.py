"""Incentives in the exchange: misreports enumerated on small scenarios (laissez_opt.simulate.market.incentives)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.simulate.market import MarketConfig
from laissez_opt.simulate.market.incentives import probe


def _one_shot(values, pools=1, rule="second"):
    """Everyone arrives at once; equal runtimes (4 ticks); losers time out when the winner finishes."""
    inst = Instance([Pool(f"P{c}", base_price=0.1) for c in range(pools)],
                    [Agent(f"T{i}", work=1.0) for i in range(len(values))],
                    [Edge(f"T{i}", f"P{c}", 0.25) for i in range(len(values)) for c in range(pools)], rounds=4)
    cfg = MarketConfig(timeout_ticks=4, price_rule=rule, value={f"T{i}": v for i, v in enumerate(values)})
    return inst, cfg


@settings(max_examples=12, deadline=None)
@given(st.lists(st.floats(0.5, 3.0), min_size=2, max_size=4))
def test_second_price_one_device_has_no_profitable_misreport(values):
    inst, cfg = _one_shot(values)
    for i in range(len(values)):
        assert [r["report"] for r in probe(inst, cfg, f"T{i}") if r["profitable"]] == []


def test_per_pool_second_price_is_not_truthful_across_pools():
    # Two pools of one device: the lowest bidder still gets a device, so bidding low lowers the price it pays.
    inst, cfg = _one_shot([0.54, 2.53, 2.78], pools=2)
    gains = {r["report"]: r["gain"] for r in probe(inst, cfg, "T2") if r["profitable"]}
    assert "scale x0.25" in gains and gains["scale x0.25"] > 0


def test_vcg_rule_removes_that_misreport():
    inst, cfg = _one_shot([0.54, 2.53, 2.78], pools=2, rule="vcg")
    assert [r for r in probe(inst, cfg, "T2", orders=False) if r["profitable"]] == []


def test_dynamic_exchange_rewards_waiting():
    # Y arrives while X holds the only device; with no cost of waiting, Y gains by bidding low and
    # taking the device at the base price once X is done (the example of docs/market.md).
    inst = Instance([Pool("P", base_price=0.1)], [Agent("X", work=1.0, arrival=0), Agent("Y", work=1.0, arrival=1)],
                    [Edge("X", "P", 0.25), Edge("Y", "P", 0.25)], rounds=10)
    cfg = MarketConfig(checkpoint_ticks=2, value={"X": 2.0, "Y": 3.0})
    rows = {r["report"]: r for r in probe(inst, cfg, "Y")}
    assert rows["truthful"]["utility"] == pytest.approx(1.0)
    assert rows["scale x0.5"]["utility"] == pytest.approx(2.6) and rows["scale x0.5"]["profitable"]
