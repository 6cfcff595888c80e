"""Shared helpers for the test suite: paths, the command line, hypothesis strategies.

Everything here is deliberately independent of the code under test where it
matters: the strategies build :class:`laissez_opt.Instance` objects from plain
records, and :mod:`brute_force` enumerates allocations without the library's
numpy views or models.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import strategies as st

from laissez_opt.instance import Agent, Edge, Instance, Pool

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
INSTANCE_FILES = sorted(INSTANCES.glob("*.json"))
R4 = INSTANCES / "hotos25-table1.json"

# The console script installed next to the interpreter running the tests (the venv's).
CLI = Path(sys.executable).parent / "laissez-opt"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # brute_force.py


# ----------------------------------------------------------------------------- command line


@dataclass
class Run:
    args: tuple
    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_cli(*args, cwd: Path | str | None = None, timeout: float = 120) -> Run:
    """Run the installed ``laissez-opt`` console script in a subprocess."""
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)
    env["COLUMNS"] = "120"
    proc = subprocess.run(
        [str(CLI), *map(str, args)],
        cwd=str(cwd) if cwd is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return Run(tuple(map(str, args)), proc.returncode, proc.stdout, proc.stderr)


def run_cli_many(arglists, cwd=None, workers: int = 4) -> list[Run]:
    """Run several command lines concurrently (each is a separate process)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda args: run_cli(*args, cwd=cwd), arglists))


# ----------------------------------------------------------------------------- instance data


def base_instance_dict() -> dict:
    """A small valid instance file (2 rounds) that malformed-input tests mutate."""
    return copy.deepcopy(
        {
            "format": "laissez-opt/instance",
            "version": 1,
            "name": "base",
            "rounds": 2,
            "round_hours": 1.0,
            "pools": [
                {"id": "P0", "count": 1, "base_price": 0.5},
                {"id": "P1", "count": 2, "cluster": "gpu"},
            ],
            "agents": [
                {"id": "A", "weight": 1.0, "demand": 1},
                {"id": "B", "weight": 2.0, "arrival": 0, "deadline": 1},
            ],
            "edges": [
                {"agent": "A", "pool": "P0", "utility": 1.0, "cost": 1.0},
                {"agent": "B", "pool": "P1", "utility": [1.0, 2.0]},
                {"agent": "B", "pool": "P0", "utility": 0.5},
            ],
        }
    )


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- strategies

#: Short decimals (two places): exact sums are easy to reason about.
short_decimals = st.integers(0, 999).map(lambda k: k / 100)
#: Arbitrary finite non-negative floats (moderate range so weighted sums stay finite).
arbitrary_floats = st.floats(min_value=0.0, max_value=1e4, allow_nan=False, allow_infinity=False)
decimal_weights = st.integers(1, 40).map(lambda k: k / 10)
float_weights = st.floats(min_value=1e-2, max_value=1e2, allow_nan=False, allow_infinity=False)


@st.composite
def small_instances(
    draw,
    *,
    max_agents: int = 3,
    max_pools: int = 3,
    max_rounds: int = 2,
    max_count: int = 2,
    demands=(None, 1, 2),
    utilities=None,
    weights=None,
    windows: bool = True,
    with_costs: bool = False,
    required: bool = False,
    min_edges: int = 0,
):
    """A tiny random instance: 1-3 agents, 1-3 pools with 1-2 devices, 1-2 rounds, sparse edges.

    ``utilities`` / ``weights``: strategies for the numbers (default: a mix of short
    decimals and arbitrary floats, chosen per instance).
    """
    if utilities is None:
        utilities = draw(st.sampled_from([short_decimals, arbitrary_floats]))
    if weights is None:
        weights = draw(st.sampled_from([decimal_weights, float_weights]))
    n = draw(st.integers(1, max_agents))
    m = draw(st.integers(1, max_pools))
    rounds = draw(st.integers(1, max_rounds))
    pools = [Pool(f"p{c}", count=draw(st.integers(1, max_count))) for c in range(m)]
    agents = []
    for i in range(n):
        arrival, deadline = 0, None
        if windows and rounds > 1:
            arrival = draw(st.integers(0, rounds - 1))
            deadline = draw(st.one_of(st.none(), st.integers(arrival, rounds - 1)))
        agents.append(
            Agent(
                f"a{i}",
                weight=draw(weights),
                demand=draw(st.sampled_from(demands)),
                arrival=arrival,
                deadline=deadline,
                required=required,
            )
        )
    pairs = [(i, c) for i in range(n) for c in range(m)]
    mask = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    if sum(mask) < min_edges:
        mask = [True] * len(pairs)
    edges = []
    for (i, c), keep in zip(pairs, mask):
        if not keep:
            continue
        if rounds > 1 and draw(st.booleans()):
            utility = tuple(draw(utilities) for _ in range(rounds))
        else:
            utility = draw(utilities)
        cost = draw(short_decimals) if with_costs else None
        edges.append(Edge(f"a{i}", f"p{c}", utility, cost=cost))
    return Instance(pools, agents, edges, rounds=rounds, name="hyp")


@pytest.fixture(scope="session")
def r4():
    from laissez_opt.io import load_instance

    return load_instance(R4)


# Continuous integration runs every property test on the same examples each time
# (derived from the test's name), so a red run is reproducible; locally, examples
# vary from run to run and keep exploring.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")
