"""``lo.reproduce`` and ``laissez-opt reproduce``: pinned verdicts, and quotes that matter.

* every row's quoted value and verdict is pinned (R5's live rows with a small run);
* every quoted number decides its verdict: a reproduced quote, perturbed, differs; a
  differing quote, set to the computed value, reproduces;
* every number of the instance files the items read is checked against a quote: perturbed
  in the instance, some verdict changes.
"""

from __future__ import annotations

import copy
import json

import pytest

from laissez_opt.errors import InputError
from laissez_opt.instance import Instance
from laissez_opt.io import instance_from_dict
from laissez_opt.reproduce import CANNOT, COMPUTED, DIFFERS, REPRODUCES, judge, quoted_data, reproduce, settle
from laissez_opt.reproduce.items import r1_tables, r4_tables
from laissez_opt.reproduce.report import Item

from conftest import INSTANCES, run_cli

PINNED = {
    "R1": {
        'table2.1.A1': ([150, 370], 'reproduces'),
        'table2.1.A2': ([275, 280], 'reproduces'),
        'table2.2.A1': ([100, 120, 150, 200], 'reproduces'),
        'table2.2.A2': ([200, 100, 50, 200], 'reproduces'),
        'fair.r1.A1.processed': (150, 'reproduces'),
        'fair.r1.A1.backlog': (0, 'reproduces'),
        'fair.r1.A1.utility': (0, 'reproduces'),
        'fair.r1.A2.processed': (225, 'differs'),
        'fair.r1.A2.backlog': (50, 'differs'),
        'fair.r1.A2.utility': (-50, 'differs'),
        'fair.r2.A1.processed': (285, 'reproduces'),
        'fair.r2.A1.backlog': (85, 'reproduces'),
        'fair.r2.A1.utility': (-85, 'reproduces'),
        'fair.r2.A2.queue': (330, 'differs'),
        'fair.r2.A2.processed': (225, 'differs'),
        'fair.r2.A2.backlog': (105, 'differs'),
        'fair.r2.A2.utility': (-105, 'differs'),
        'efficient.r1.A1.backlog': (0, 'reproduces'),
        'efficient.r1.A2.backlog': (0, 'reproduces'),
        'efficient.r2.A1.processed': (350, 'reproduces'),
        'efficient.r2.A1.backlog': (20, 'reproduces'),
        'efficient.r2.A2.backlog': (0, 'reproduces'),
        'sim.time_equal.backlog': (None, 'computed'),
        'sim.min_backlog.backlog': (None, 'computed'),
        'exact.whole-device.total': (None, 'computed'),
        'exact.whole-device.leximin': (None, 'computed'),
        'exact.time-shared.total': (None, 'computed'),
        'exact.time-shared.leximin': (None, 'computed'),
    },
    "R2": {
        'table3.1.A1[0]': ([0.1, 0.9, 0.1, 0.2], 'reproduces'),
        'order.A1[0]': ([2, 4, 3, 1], 'reproduces'),
        'table3.1.A1[1]': ([0.9, 0.9, 0.9, 0.6], 'reproduces'),
        'order.A1[1]': ([1, 2, 3, 4], 'reproduces'),
        'table3.1.A1[2]': ([0.8, 0.3, 0.9, 0.1], 'reproduces'),
        'order.A1[2]': ([3, 1, 2, 4], 'reproduces'),
        'table3.1.A2[0]': ([0.5, 0.6, 0.5, 0.7], 'reproduces'),
        'order.A2[0]': ([4, 2, 3, 1], 'reproduces'),
        'table3.1.A2[1]': ([0.4, 0.5, 0.6, 0.6], 'reproduces'),
        'order.A2[1]': ([4, 2, 3, 1], 'differs'),
        'table3.1.A2[2]': ([0.6, 0.5, 0.1, 0.5], 'reproduces'),
        'order.A2[2]': ([1, 2, 4, 3], 'reproduces'),
        'utility.time_equal[0]': (3.35, 'reproduces'),
        'utility.time_equal[1]': (3.05, 'reproduces'),
        'pareto.time_equal': (None, 'computed'),
        'utility.M0[0]': (4.6, 'reproduces'),
        'phi.M0[0]': (1.36, 'differs'),
        'utility.M0[1]': (3.2, 'reproduces'),
        'phi.M0[1]': (1.04, 'differs'),
        'pareto.M0': (None, 'computed'),
        'utility.M1[0]': (2.8, 'reproduces'),
        'phi.M1[0]': (0.82, 'differs'),
        'envy.M1[0]': (3.9, 'reproduces'),
        'utility.M1[1]': (3.1, 'reproduces'),
        'phi.M1[1]': (1.02, 'reproduces'),
        'envy.M1[1]': (3.0, 'reproduces'),
        'pareto.M1': (None, 'computed'),
        'utility.MTF[0]': (5.3, 'reproduces'),
        'phi.MTF[0]': (1.58, 'reproduces'),
        'envy.MTF[0]': (1.4, 'reproduces'),
        'utility.MTF[1]': (3.3, 'reproduces'),
        'phi.MTF[1]': (1.08, 'reproduces'),
        'envy.MTF[1]': (2.8, 'reproduces'),
        'pareto.MTF': (None, 'computed'),
        'envious.M1.A1': (True, 'reproduces'),
        'round1.M1[0]': (0.3, 'reproduces'),
        'round1.M1[1]': (1.1, 'reproduces'),
        'round1.MTF[0]': (0.9, 'reproduces'),
        'round1.MTF[1]': (1.7, 'reproduces'),
        'mtf.default': (None, 'computed'),
        'mtf.uniform': (None, 'computed'),
        'mtf.learned': (None, 'computed'),
        'mtf.tables': (None, 'computed'),
        'mtf.any': (True, 'reproduces'),
    },
    "R3": {
        'row.A1': (None, 'computed'),
        'row.A2': (None, 'computed'),
        'row.A3': (None, 'computed'),
        'row.A4': (None, 'computed'),
        'row.A5': (None, 'computed'),
        'envy_free': (True, 'differs'),
        'envy_free_without_ambiguous_row': (None, 'computed'),
    },
    "R4": {
        'table1.time.A': ({"A10": 0.35, "L4": 0.51, "Trainium": 0.3}, 'reproduces'),
        'table1.cost.A': ({"A10": 0.21, "L4": 0.25, "Trainium": 0.24}, 'reproduces'),
        'table1.time.B': ({"A10": 0.23, "L4": 0.32}, 'reproduces'),
        'table1.cost.B': ({"A10": 0.14, "L4": 0.15}, 'reproduces'),
        'price.A10': (0.606, 'reproduces'),
        'price.Trainium': (0.804, 'reproduces'),
        'bids_file.A': (0.687, 'reproduces'),
        'bids_file.A.utility': (0.687, 'reproduces'),
        'bids_file.B': (0.762, 'reproduces'),
        'bids_file.B.utility': (0.762, 'reproduces'),
        'bids_file.base_price': (0.606, 'reproduces'),
        'a_first.B.cost_pct': (8, 'differs'),
        'a_first.B.slower_pct': (39, 'reproduces'),
        'b_first.A.cost_pct': (13, 'differs'),
        'b_first.A.faster_pct': (14, 'reproduces'),
        'b_first.total_cost_higher': (True, 'reproduces'),
        'min_cost.total': (None, 'computed'),
        'bid.A': (0.687, 'differs'),
        'rebid.B': (0.652, 'reproduces'),
        'bid.B': (0.762, 'cannot be computed'),
        'auction1.winner': ("B", 'reproduces'),
        'auction1.price': (0.687, 'reproduces'),
        'auction2.winner': ("A", 'reproduces'),
        'auction2.price': (0.652, 'reproduces'),
        'auction3.price': (0.606, 'reproduces'),
        'market.path': ([0.687, 0.652, 0.606], 'cannot be computed'),
    },
    "R5": {
        'table5.1': ({"ResNet conv": [70.262, 86.332], "ResNet matmul": [3.001, 4.139], "MobileNet conv": [81.644, 111.995], "MobileNet WS": [1.48, 2.101]}, 'reproduces'),
        'equal.themis_pct': (152, 'differs'),
        'equal.two_pct': (39, 'differs'),
        '1-2.themis_pct': (183, 'differs'),
        '1-2.two_pct': (43, 'differs'),
        '1-2-4.themis_pct': (73, 'differs'),
        '1-2-4.two_pct': (25, 'differs'),
        '1-2-8.themis_pct': (62, 'differs'),
        '1-2-8.two_pct': (14, 'differs'),
        'full.equal.themis_pct': (152, 'differs'),
        'full.equal.two_pct': (39, 'differs'),
        'full.1-2.themis_pct': (183, 'differs'),
        'full.1-2.two_pct': (43, 'differs'),
        'full.1-2-4.themis_pct': (73, 'differs'),
        'full.1-2-4.two_pct': (25, 'differs'),
        'full.1-2-8.themis_pct': (62, 'differs'),
        'full.1-2-8.two_pct': (14, 'differs'),
        'full.headline.ratio': (1.28, 'differs'),
        'full.deadline.gandiva_fair_pct': (8, 'differs'),
        'full.deadline.two_pct': (13, 'differs'),
    },
}


@pytest.fixture(scope="module")
def report():
    return reproduce(["R1", "R2", "R3", "R4"])


@pytest.fixture(scope="module")
def r5_report():
    return reproduce("R5", r5_seeds=2, r5_rounds=8)


#: Rows whose verdict depends on the machine (timings) or on whether the market simulator exists.
UNPINNED = ("overhead.themis_highest", "overhead.mtf_below_gandiva_fair", "market.path")


def _market() -> bool:
    from laissez_opt.simulate import PRESETS

    return "hotos25-section5" in PRESETS


def _rows(rep):
    return {item.id: {r.key: (r.quoted, r.verdict) for r in item.rows if r.key not in UNPINNED}
            for item in rep.items}


def test_verdicts_are_pinned(report, r5_report):
    got = {**_rows(report), **_rows(r5_report)}
    assert report.ok and r5_report.ok
    for item, rows in PINNED.items():
        assert got[item] == {k: v for k, v in rows.items() if k not in UNPINNED}, item


def test_counts_and_findings(report):
    counts = report.counts()
    assert counts["R1"] == {REPRODUCES: 15, DIFFERS: 7, CANNOT: 0, COMPUTED: 6}
    assert counts["R3"][DIFFERS] == 1
    assert counts["R4"][CANNOT] == (1 if _market() else 2)   # B's first bid; the exchange until it exists
    r1 = {r.key: r for r in report.item("R1").rows}
    assert r1["fair.r2.A2.backlog"].computed == 5.0 and "275" in r1["fair.r2.A2.backlog"].note
    assert r1["exact.whole-device.total"].computed == 20.0 and r1["exact.time-shared.total"].computed == 0.0
    r2 = {r.key: r for r in report.item("R2").rows}
    assert r2["mtf.tables"].computed == [7, 9, 11] and r2["mtf.default"].computed is False
    assert "fixed:0.7/T=7/agent" in r2["mtf.uniform"].note
    r4 = {r.key: r for r in report.item("R4").rows}
    assert r4["bid.A"].computed == pytest.approx(0.24 / 0.35, abs=1e-4)
    assert r4["auction2.winner"].computed == "A"


def _flip(value):
    """A quote changed enough to matter: numbers by 37% and 1, flags negated, names altered."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return round(value * 1.37 + 1.0, 3)
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, list):
        return [_flip(value[0])] + value[1:]
    if isinstance(value, dict):
        key = next(iter(value))
        return {**value, key: _flip(value[key])}
    raise AssertionError(value)


def _as_quote(computed):
    if isinstance(computed, dict) and "any_of" in computed:
        return computed["any_of"][0]
    if isinstance(computed, dict) and "mean" in computed:
        return computed["mean"]
    return computed


def test_every_quote_decides_its_verdict(report, r5_report):
    for item in report.items + r5_report.items:
        for row in item.rows:
            if row.verdict == REPRODUCES:
                assert judge(_flip(row.quoted), row.computed) == DIFFERS, (item.id, row.key)
            elif row.verdict == DIFFERS:
                assert judge(_as_quote(row.computed), row.computed) == REPRODUCES, (item.id, row.key)


def test_every_quoted_entry_is_used(report, r5_report):
    """A quote nobody compares would be a number edited without any verdict changing."""
    used = {(item.id, (row.quote or row.key).split("[")[0].removeprefix("full."))
            for item in report.items + r5_report.items for row in item.rows}
    data = quoted_data()
    for item_id in ("R1", "R2", "R3", "R4", "R5"):
        for key in data[item_id]["quoted"]:
            assert (item_id, key) in used, (item_id, key)


def _leaves(doc: dict):
    """Paths of the numbers an instance encodes from the seed: utilities, costs, bids, arrivals, quoted prices."""
    for k, e in enumerate(doc["edges"]):
        for field in ("utility", "cost", "bid"):
            if field in e:
                if isinstance(e[field], list):
                    yield from ((("edges", k, field, r),) for r in range(len(e[field])))
                else:
                    yield (("edges", k, field),)
    for k, a in enumerate(doc["agents"]):
        for r in range(len(a.get("arrivals", []))):
            yield (("agents", k, "arrivals", r),)
    for k, p in enumerate(doc["pools"]):
        if p["id"] in ("A10", "Trainium"):
            yield (("pools", k, "base_price"),)


def _perturbed(doc: dict, path) -> Instance:
    out = copy.deepcopy(doc)
    node = out
    for step in path[0][:-1]:
        node = node[step]
    node[path[0][-1]] = round(node[path[0][-1]] * 1.37 + 0.01, 6)
    return instance_from_dict(out)


def _verdicts(item_id: str, rows) -> list[str]:
    return [r.verdict for r in settle(Item(item_id, "", rows=rows), quoted_data()).rows]


@pytest.mark.parametrize("item_id,files", [
    ("R1", ["thesis-r1-fair-vs-efficient.json"]),
    ("R4", ["hotos25-table1.json", "hotos25-section5-bids.json"]),
])
def test_every_number_of_the_instances_is_checked_against_a_quote(item_id, files):
    docs = [json.loads((INSTANCES / f).read_text()) for f in files]

    def tables(instances):
        return r1_tables(*instances) if item_id == "R1" else r4_tables(*instances)

    base = _verdicts(item_id, tables([instance_from_dict(d) for d in docs]))
    assert set(base) == {REPRODUCES}
    for k, doc in enumerate(docs):
        for path in _leaves(doc):
            instances = [instance_from_dict(d) for d in docs]
            instances[k] = _perturbed(doc, path)
            assert _verdicts(item_id, tables(instances)) != base, (files[k], path)


def test_r2_instance_numbers_are_checked(report):
    """Table 3.1 rows compare every utility of the R2 instance with the quote."""
    rows = [r for r in report.item("R2").rows if r.key.startswith("table3.1.")]
    assert len(rows) == 6 and all(r.verdict == REPRODUCES and len(r.computed) == 4 for r in rows)


def test_market_row_says_why_until_the_exchange_exists(report):
    row = next(r for r in report.item("R4").rows if r.key == "market.path")
    if _market():
        # The exchange prices A's bid from Table 1 (0.686), a thousandth below the quote.
        assert row.verdict == DIFFERS and row.computed == [0.686, 0.652, 0.606]
    else:
        assert row.verdict == CANNOT and "the exchange is not built" in row.note


def test_command_line_writes_the_report(tmp_path):
    run = run_cli("reproduce", "R3", "r4", "-o", tmp_path / "out")
    assert run.returncode == 0, run.stderr
    assert "R3" in run.stdout and "differs" in run.stdout
    text = (tmp_path / "out" / "REPORT.md").read_text()
    assert "## R3" in text and "## R4" in text and "instances/hotos25-table1.json" in text
    data = json.loads((tmp_path / "out" / "reproduce.json").read_text())
    assert data["ok"] and [i["id"] for i in data["items"]] == ["R3", "R4"]


@pytest.mark.parametrize("args,where", [(("R9",), "ITEM"), (("R3", "--r5-seeds", "1"), "--r5-seeds")])
def test_bad_input_is_one_line(args, where):
    run = run_cli("reproduce", *args)
    assert run.returncode == 2 and len(run.stderr_lines) == 1 and where in run.stderr


def test_output_must_be_a_directory(tmp_path):
    (tmp_path / "f").write_text("x")
    run = run_cli("reproduce", "R3", "-o", tmp_path / "f")
    assert run.returncode == 2 and "not a directory" in run.stderr


def test_a_library_failure_is_reported_and_fails(monkeypatch):
    from laissez_opt.reproduce import items

    def broken(ctx):
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(items.ITEMS, "R3", broken)
    rep = reproduce("R3")
    assert not rep.ok and "boom" in rep.item("R3").error


def test_missing_instances_are_bad_input(tmp_path):
    with pytest.raises(InputError, match="thesis-r1-fair-vs-efficient.json"):
        reproduce("R1", root=tmp_path)


def test_table_3_2_rows_are_written_as_result_files_the_check_command_reads(report, tmp_path):
    report.write(tmp_path)
    files = sorted(p.name for p in (tmp_path / "R2").iterdir())
    assert files == ["table3.2-M0.json", "table3.2-M1.json", "table3.2-MTF.json", "table3.2-time_equal.json"]
    run = run_cli("check", INSTANCES / "thesis-r2-table3-1.json", tmp_path / "R2" / "table3.2-M1.json", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["utilities"] == {"A1": 2.8, "A2": 3.1}
