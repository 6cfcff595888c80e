"""How often a tenant gains by misreporting, per setting and price rule (laissez_opt.simulate.market.incentives).

Settings (three tenants, values uniform on 0.5..3, base price 0.1/h, every job four
hours on one device):

* ``one-shot, 1 pool``: everyone arrives at once, one device, losers time out when
  the winner finishes (a sealed-bid auction);
* ``one-shot, 2 pools``: the same with two pools of one device each;
* ``dynamic, 1 pool``: arrivals at hours 0, 1, 2, checkpoints every 2 hours, no
  time-outs (the exchange as the paper runs it).

For every draw and tenant, :func:`probe` tries bids scaled by 0.25..4 and every other
priority order against truthful others; the table gives the share of (draw, tenant)
pairs with a profitable misreport and the largest gain.

Usage::

    python benchmarks/market_incentives.py [--draws K] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from laissez_opt.instance import Agent, Edge, Instance, Pool
from laissez_opt.simulate.market import MarketConfig
from laissez_opt.simulate.market.incentives import probe

SETTINGS = ("one-shot, 1 pool", "one-shot, 2 pools", "dynamic, 1 pool")


def build(setting: str, values, rule: str):
    pools = 2 if "2 pools" in setting else 1
    dynamic = setting.startswith("dynamic")
    agents = [Agent(f"T{i}", work=1.0, arrival=i if dynamic else 0) for i in range(len(values))]
    inst = Instance([Pool(f"P{c}", base_price=0.1) for c in range(pools)], agents,
                    [Edge(a.id, f"P{c}", 0.25) for a in agents for c in range(pools)], rounds=8)
    cfg = MarketConfig(price_rule=rule, checkpoint_ticks=2 if dynamic else 1, timeout_ticks=None if dynamic else 4,
                       value={f"T{i}": v for i, v in enumerate(values)})
    return inst, cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args()
    rows = []
    for setting in SETTINGS:
        for rule in ("second", "vcg"):
            rng = np.random.default_rng(7)
            pairs = hits = 0
            best = (0.0, None)
            for _ in range(args.draws):
                values = rng.uniform(0.5, 3.0, size=3).round(3).tolist()
                inst, cfg = build(setting, values, rule)
                for i in range(3):
                    found = [r for r in probe(inst, cfg, f"T{i}", orders=(rule == "second")) if r["profitable"]]
                    pairs += 1
                    if found:
                        hits += 1
                        top = max(found, key=lambda r: r["gain"])
                        if top["gain"] > best[0]:
                            best = (top["gain"], {"values": values, "tenant": f"T{i}", "report": top["report"]})
            rows.append({"setting": setting, "rule": rule, "pairs": pairs, "profitable": hits,
                         "share": hits / pairs, "max_gain": best[0], "example": best[1]})
            print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "market_incentives.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["# Profitable misreports in the exchange", "",
             f"{args.draws} draws of three tenant values per setting; every tenant probed (bids x0.25..x4, "
             "other priority orders under `second`).", "",
             "| setting | rule | tenants with a profitable misreport | largest gain | example |", "|---|---|---|---|---|"]
    for r in rows:
        ex = r["example"]
        text = f"values {ex['values']}, {ex['tenant']}: {ex['report']}" if ex else "-"
        lines.append(f"| {r['setting']} | {r['rule']} | {r['profitable']} / {r['pairs']} ({r['share']:.0%}) | "
                     f"{r['max_gain']:.3f} | {text} |")
    (out / "market_incentives.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
