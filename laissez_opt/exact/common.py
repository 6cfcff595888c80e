"""Constraints every allocation model shares, written once.

The allocation ``x_{i,c,r}`` lives on the edges: one column per edge ``(i, c)``
and round ``r`` (block ``x``, column ``e * R + r``).  Feasibility
(``models.md``, Notation):

* ``capacity``: ``sum_i x_{i,c,r} <= k_c`` for every pool ``c`` and round ``r``;
* ``demand``:   ``sum_c x_{i,c,r} <= d_i`` for every agent ``i`` and round ``r``
  (no row where ``d_i`` is unbounded);
* ``x_{i,c,r} = 0`` off edges (no column exists), before the agent's arrival
  round ``a_i`` and after its deadline ``D_i`` (upper bound 0).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..limits import SizeEstimate
from ..modeling.linear import LinearModel, VariableBlock
from ..modeling.solution import Solution
from ..result import Result, agent_values, allocation_columns, edge_utilities

__all__ = ["AllocationColumns", "add_allocation", "allocation_result", "allocation_size", "capacity_prices", "EDGE_ROUND_BYTES",
           "FLOW_BYTES", "RECORD_BYTES", "flow_route_size", "refuse_overflow", "takes_flow_route",
           "within_capacity"]

#: Bytes held per edge-round outside the model: utilities, bounds, the amount array,
#: the verifier's copies and metrics (float64 each).
EDGE_ROUND_BYTES = 8 * 8
#: Bytes per allocation record (a dict of four entries) in a result.
RECORD_BYTES = 450
#: Bytes per edge-round on the min-cost-flow route beyond the per-column and per-row
#: figures of :class:`~laissez_opt.limits.SizeEstimate` (the flow's arc arrays and the
#: result's amounts): 264 B per edge-round in all.  Measured beyond the instance:
#: welfare 215 B at 65,536 and 187 at 262,144 uniform agents, vcg 229 at 4,096 and 210
#: at 8,192 neocloud agents (with its exchange graph).
FLOW_BYTES = 64
#: The most edge-rounds whose costs :func:`takes_flow_route` reads to tell the route (a transient
#: 16 bytes each, about 0.5 GiB at this size); beyond it the estimate assumes the HiGHS route,
#: which needs over 30 GiB there, so the choice changes no refusal on machines of today.
INSPECT_EDGE_ROUNDS = 2**25


def refuse_overflow(values: np.ndarray, instance: Instance | None = None, agent: np.ndarray | None = None) -> None:
    """Refuse normalised coefficients that overflowed float64.

    The format admits any weight ``w_i > 0``, so a weight near the smallest float
    (``1e-320``) makes ``u / (w E)`` or ``delta / w`` infinite.  No solver can
    take such a row, so the instance is refused before any model is built; with
    ``instance`` and ``agent`` (each value's agent) the error names the first such agent
    (and its JSON path when the instance was read from a file).

    >>> refuse_overflow(np.array([1.0, 2.0]))
    >>> refuse_overflow(np.array([1.0, np.inf]))
    Traceback (most recent call last):
    ...
    laissez_opt.errors.InputError: instance: the normalised values overflow (a weight or a normaliser is too close to 0 for floating point); rescale the weights or the utilities
    """
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    text = ("the normalised values overflow (a weight or a normaliser is too close to 0 for floating point); "
            "rescale the weights or the utilities")
    if instance is None or agent is None:
        raise InputError(text, path="instance")
    i = int(np.asarray(agent)[np.argmax(bad)])
    if instance.source is None:
        # A derived instance (the agent classes of a compressed solve): its indices are not the file's.
        raise InputError(f"agent {instance.agents[i].id!r}: {text}", path="instance")
    raise InputError(f"agent {instance.agents[i].id!r}: {text}", source=instance.source, path=f"$.agents[{i}].weight")


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class AllocationColumns:
    """Index arithmetic between the ``x`` block and (edge, round).

    ``edge``, ``round``, ``agent`` and ``pool`` give, for each column of the
    block, its edge, round, agent row and pool column.  With a single round
    ``agent`` and ``pool`` are read-only views of the instance's edge arrays
    (no copy).
    """

    def __init__(self, instance: Instance, block: VariableBlock):
        self.instance = instance
        self.block = block
        rounds = instance.rounds
        if rounds == 1:
            self.edge = np.arange(instance.n_edges)
            self.round = np.zeros(instance.n_edges, dtype=np.int64)
            self.agent = _read_only(instance.edge_agent)
            self.pool = _read_only(instance.edge_pool)
        else:
            self.edge = np.repeat(np.arange(instance.n_edges), rounds)
            self.round = np.tile(np.arange(rounds), instance.n_edges)
            self.agent = instance.edge_agent[self.edge]
            self.pool = instance.edge_pool[self.edge]

    def amounts(self, solution: Solution) -> np.ndarray:
        """The solution's ``x`` as an ``E x R`` array."""
        return solution.values[self.block.slice].reshape(self.instance.n_edges, self.instance.rounds)


def _active_upper(instance: Instance, agent: np.ndarray, round_: np.ndarray) -> np.ndarray | None:
    """Which columns lie inside their agent's arrival..deadline window; None when all do.

    The window ends at :attr:`Instance.last_rounds` (the deadline clamped to the
    horizon), so a deadline at or after the last round masks nothing.
    """
    last = instance.last_rounds
    if not any(a.arrival > 0 for a in instance.agents) and bool(np.all(last == instance.rounds - 1)):
        return None
    arrival = np.array([a.arrival for a in instance.agents], dtype=np.int64)
    return (round_ >= arrival[agent]) & (round_ <= last[agent])


def allocation_size(instance: Instance, options: dict | None = None, *, extra_variables: float = 0,
                    extra_constraints: float = 0, extra_nonzeros: float = 0, note: str = "") -> SizeEstimate:
    """Size of the allocation block ``x`` with ``capacity`` and ``demand`` rows, plus model-specific extras.

    ``E R`` columns, ``(n + m) R`` rows, ``2 E R`` non-zeros; outside the model, the
    edge-round arrays and at most one allocation record per row of a basic solution.
    Sizes are floats: an instance may ask for more than any integer type holds.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A")], [lo.Edge("A", "P", 1.0)], rounds=10**9)
    >>> allocation_size(inst).bytes() > 2**40
    True
    """
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    rows = (float(instance.n_agents) + float(instance.n_pools)) * float(instance.rounds)
    records = min(edge_rounds, rows)
    return SizeEstimate(
        variables=edge_rounds + extra_variables,
        constraints=rows + extra_constraints,
        nonzeros=2 * edge_rounds + extra_nonzeros,
        dense_bytes=edge_rounds * EDGE_ROUND_BYTES + records * RECORD_BYTES,
        note=note or f"{instance.n_edges} edges x {instance.rounds} rounds",
    )


def takes_flow_route(instance: Instance, options: dict, costs) -> bool:
    """Whether a transportation model of ``instance`` would be solved as a min-cost flow.

    Told from the options and the objective's costs before anything is built, as
    :func:`laissez_opt.modeling.solve.pick_route` and the OR-Tools route decide:
    ``via="direct"``, ``solver`` ``"ortools"``, or ``"auto"`` with ``costs()`` (per
    edge-round) scaling exactly to 64-bit integers.  ``costs()`` is called only up to
    :data:`INSPECT_EDGE_ROUNDS` edge-rounds: an estimate never allocates what it is there
    to refuse.

    >>> import laissez_opt as lo
    >>> inst = lo.generate("uniform", 50, 5, seed=1)
    >>> costs = lambda: inst.weights[inst.edge_agent] * inst.edge_utility[:, 0]
    >>> takes_flow_route(inst, {}, costs), takes_flow_route(inst, {"solver": "highs"}, costs)
    (True, False)
    """
    from ..modeling.ortools_route import _integer_scale

    solver = options.get("solver", "auto")
    if options.get("via", "direct") != "direct" or solver not in ("auto", "ortools"):
        return False
    if solver == "ortools":
        return True  # demands and counts are whole numbers (the contract): the route's flow applies
    if float(instance.n_edges) * float(instance.rounds) > INSPECT_EDGE_ROUNDS:
        return False  # too many costs to read before building: size the HiGHS route (the larger estimate)
    demands = instance.demands.astype(float)
    finite = demands[np.isfinite(demands)]
    total = float(instance.counts.sum())
    if finite.size == demands.size:
        total = min(total, float(finite.sum()))
    return _integer_scale(np.ravel(costs()), total * float(instance.rounds))[1] == 0.0


def flow_route_size(instance: Instance, note: str) -> SizeEstimate:
    """Size of a transportation model of ``instance`` on the min-cost-flow route (about 264 B per edge-round).

    >>> import laissez_opt as lo
    >>> inst = lo.generate("uniform", 50, 5, seed=1)
    >>> flow_route_size(inst, "flow").bytes() < allocation_size(inst).bytes()
    True
    """
    edge_rounds = float(instance.n_edges) * float(instance.rounds)
    return SizeEstimate(variables=edge_rounds,
                        constraints=(float(instance.n_agents) + float(instance.n_pools)) * float(instance.rounds),
                        dense_bytes=edge_rounds * FLOW_BYTES, note=note)


def add_allocation(model: LinearModel, instance: Instance, *, integral: bool) -> AllocationColumns:
    """Declare block ``x`` and the shared ``capacity`` and ``demand`` constraints.

    The pair is declared as a bipartite transportation structure (left nodes:
    agent-rounds with capacity ``d_i``; right nodes: pool-rounds with capacity
    ``k_c``), so routes may exploit total unimodularity and min-cost flow while
    no other constraint is added.
    """
    rounds = instance.rounds
    size = instance.n_edges * rounds
    columns = AllocationColumns(instance, None)
    agent, pool, round_ = columns.agent, columns.pool, columns.round
    upper = np.minimum(instance.effective_demands[agent], instance.counts.astype(float)[pool])
    active = _active_upper(instance, agent, round_)
    if active is not None:
        upper = np.where(active, upper, 0.0)
    block = model.add_variables(
        "x",
        size,
        lower=0.0,
        upper=upper,
        integer=integral,
        description="devices of pool c given to agent i in round r, one column per edge and round",
    )
    columns.block = block
    model.add_transportation(
        block,
        left=agent if rounds == 1 else agent * rounds + round_,
        right=pool if rounds == 1 else pool * rounds + round_,
        left_capacity=np.repeat(instance.demands, rounds),
        right_capacity=np.repeat(instance.counts.astype(float), rounds),
        left_block="demand",
        right_block="capacity",
        left_description="sum_c x[i,c,r] <= d_i for each agent i and round r",
        right_description="sum_i x[i,c,r] <= k_c for each pool c and round r",
    )
    return columns


def within_capacity(instance: Instance, amounts: np.ndarray) -> np.ndarray:
    """``E x R`` fractional amounts without the solver's excess: no pool-round above ``k_c``, no agent-round above ``d_i``.

    An LP optimum meets its rows only to the solver's feasibility tolerance
    (HiGHS: 1e-7, after scaling); a pool's amounts summing to ``k_c + 2e-9`` are
    then reported as an allocation that breaks the capacity, which the exact
    check of :func:`laissez_opt.certify` refuses at its tolerance of 1e-9 (found
    by hypothesis on fractional Themis).  Each pool-round over its capacity has
    its amounts scaled by ``k_c / used`` and then each agent-round over its demand
    by ``d_i / taken`` (factors within the tolerance of 1, so every value moves by
    about as little); negative amounts become 0.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P", count=1)], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 1.0), lo.Edge("B", "P", 1.0)])
    >>> fitted = within_capacity(inst, np.array([[0.5 + 2e-9], [0.5]]))
    >>> bool(fitted.sum() <= 1.0), fitted.round(6).ravel().tolist()
    (True, [0.5, 0.5])
    """
    out = np.clip(amounts, 0.0, None)
    for r in range(out.shape[1]):
        column = out[:, r]
        used = np.bincount(instance.edge_pool, weights=column, minlength=instance.n_pools)
        over = used > instance.counts
        if over.any():
            column *= np.where(over, instance.counts / np.where(over, used, 1.0), 1.0)[instance.edge_pool]
        taken = np.bincount(instance.edge_agent, weights=column, minlength=instance.n_agents)
        over = taken > instance.demands
        if over.any():
            column *= np.where(over, instance.demands / np.where(over, taken, 1.0), 1.0)[instance.edge_agent]
    return out


def allocation_result(
    instance: Instance,
    method: str,
    columns: AllocationColumns,
    solution: Solution,
    *,
    fractional: bool,
    params: dict,
    details: dict | None = None,
    fit_capacity: bool = False,
) -> Result:
    """Package a solution of an allocation model as a :class:`Result`.

    ``fit_capacity`` (fractional models whose columns are devices): the amounts pass
    through :func:`within_capacity`, so the solver's tolerance never shows as a broken
    capacity or demand.
    """
    timing = {"build_s": solution.build_s, "solve_s": solution.solve_s}
    common = dict(
        instance=instance.name,
        method=method,
        solver=solution.solver,
        route=solution.route,
        solver_status=solution.solver_status,
        mode="fractional" if fractional else "integral",
        params=params,
        timing=timing,
        message=solution.message,
        details=details or {},
    )
    if solution.status == "infeasible":
        return Result(status="infeasible", **common)
    amounts = columns.amounts(solution)
    if not fractional:
        amounts = np.round(amounts)
    amounts = np.where(np.abs(amounts) < 1e-12, 0.0, amounts)
    if fractional and fit_capacity:
        amounts = within_capacity(instance, amounts)
    utilities = edge_utilities(instance, amounts)
    return Result(
        status=solution.status,
        objective=solution.objective,
        bound=solution.bound,
        gap=solution.gap,
        allocation=allocation_columns(instance, amounts),
        utilities=agent_values(instance, utilities),
        amounts=amounts,
        **common,
    )


def capacity_prices(instance: Instance, model: LinearModel, row_dual: np.ndarray | None, *,
                    base: np.ndarray | None = None) -> dict | None:
    """The dual of each ``capacity`` row as a price per pool (and round); None without duals.

    For a maximisation LP the dual ``y_{c,r} >= 0`` of row
    ``sum_i x_{i,c,r} <= k_c`` is how much the optimum grows per extra device
    of pool ``c`` in round ``r``; for a minimisation, ``-y_{c,r}``, how much it
    falls.  With the welfare objective these are Walrasian (market-clearing)
    prices: at prices ``p_{c,r}`` every agent's bundle in the optimum is one it
    prefers most (it maximises ``sum_c (w_i u_{i,c,r} - p_{c,r}) x_{i,c,r}``
    within its demand), and a pool with unsold devices has price 0
    (complementary slackness; Shapley & Shubik, 1971).  ``base`` (per pool) is
    added to every price of its pool (a VCG reserve).  Returns
    ``{pool: price}`` with one round and ``{pool: [price per round]}`` otherwise.

    >>> import numpy as np, laissez_opt as lo
    >>> from laissez_opt.exact.welfare import build_welfare
    >>> from laissez_opt.modeling import solve_model
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")], [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)])
    >>> model, _ = build_welfare(inst)
    >>> prices = capacity_prices(inst, model, solve_model(model, duals=True).duals.row)
    >>> 0.5 <= prices["P"] <= 0.9     # between the losing and the winning value
    True
    """
    block = model.constraints.get("capacity")
    rows = instance.n_pools * instance.rounds
    if row_dual is None or block is None or block.size != rows:
        return None
    y = np.asarray(row_dual, dtype=np.float64)[block.start:block.start + rows]
    y = (y if model.sense == "max" else -y).reshape(instance.n_pools, instance.rounds)
    y = np.where(np.abs(y) < 1e-12, 0.0, y)
    if base is not None:
        y = y + np.asarray(base, dtype=np.float64)[:, None]
    ids = [p.id for p in instance.pools]
    if instance.rounds == 1:
        return {pool: float(v) for pool, v in zip(ids, y[:, 0])}
    return {pool: [float(v) for v in row] for pool, row in zip(ids, y)}
