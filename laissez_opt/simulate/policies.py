"""Policies: what decides each round's allocation.

A policy sees the round as a :class:`RoundView` (a one-round instance built from the
queues, see :mod:`laissez_opt.simulate.view`) and returns a :class:`Decision`: devices
(or time shares) per edge, and optionally payments and prices.  A policy object
lives for one run (one seed) and may keep state between rounds.

Every registered method is a policy without extra code (:class:`MethodPolicy`): each
round it calls :func:`laissez_opt.api.solve` on the view with the options given,
unchanged (``lo.solve`` checks them), and verifies the allocation.  Exact models are
re-solved every round on the current queues (``themis`` with ``t_i`` = the age of the
agent's oldest job).  Cross-round state travels through the methods' public
``state`` option: a method whose result carries ``details["state"]`` (turns, stride
passes, token budgets, a partition) gets it back the next round, so ``mtf``,
``round_robin``, ``dynamic_partition``, ``gandiva_fair`` and ``fixed_partition``
continue exactly as in one multi-round call.  Two adaptations, both here:

* ``mtf`` with a learned threshold (``"hedge"``, ``"actor_critic"``): the learner is
  created once per run (seeded with the ``seed`` option, default the run seed) and
  passed as the ``threshold`` object every round, wrapped so that a round is not an
  episode: learning carries on across rounds (thesis 002, section 4.2);
* ``fixed_partition`` draws its partition once, in round 0, on the view with the
  instance's demands (a partition that lasts the whole horizon must not depend on
  the first round's queues); later rounds keep it.

Simulator policies: ``min_backlog`` (:mod:`laissez_opt.simulate.min_backlog`).
User policies: :func:`register_policy` with a :class:`Policy` subclass or instance, or
a plain function ``f(view) -> amounts | Result | Decision``.

Example
-------
>>> import numpy as np, laissez_opt as lo
>>> register_policy("all_to_first", lambda view: np.where(view.instance.edge_agent == 0,
...                 view.instance.counts[view.instance.edge_pool], 0.0), replace=True)
>>> policy = resolve("all_to_first", {}).build()
>>> policy.name
'all_to_first'
>>> unregister_policy("all_to_first")
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..heuristics.thresholds import ThresholdPolicy, make_policy as make_threshold_policy
from ..instance import Instance
from ..methods import METHODS, register_method, registered_at_runtime
from ..result import Result

__all__ = [
    "RoundView",
    "Decision",
    "Policy",
    "MethodPolicy",
    "CallablePolicy",
    "PolicyFactory",
    "register_policy",
    "unregister_policy",
    "registered_policies",
    "resolve",
    "policy_names",
    "simulator_policies",
]


@dataclass
class RoundView:
    """What a policy may look at in round ``round`` (all arrays indexed like the base agents).

    ``instance``: the one-round view (edges of the base instance, queue-aware agents);
    ``backlog`` ``q_i^r`` and ``jobs`` after this round's drops and arrivals;
    ``arrived`` work that arrived at the start of the round; ``demands`` ``d_i^r``;
    ``elapsed`` ``t_i``; ``work_per_device`` ``u_{i,c,r}`` times the tick scale per edge;
    ``hours``: simulated time at the start of the round; ``events``: the previous
    round's event records when the run keeps an event log (else ``None``);
    ``with_demands(d)``: the same view with other demands.
    """

    round: int
    hours: float
    instance: Instance
    base: Instance
    backlog: np.ndarray
    jobs: np.ndarray
    arrived: np.ndarray
    demands: np.ndarray
    elapsed: np.ndarray
    work_per_device: np.ndarray
    seed: int
    events: list | None = None
    with_demands: Callable[[np.ndarray], Instance] | None = field(default=None, repr=False)


@dataclass
class Decision:
    """A policy's answer: ``amounts`` ``x_{i,c}`` per edge of the view (shape ``(E,)``).

    ``mode``: ``"integral"`` (whole devices) or ``"fractional"`` (time shares);
    ``result``: the method's :class:`~laissez_opt.result.Result` when there is one;
    ``payments``: money each agent pays for the round (agent id -> amount);
    ``prices``: price per device-hour of each pool (pool id -> price);
    ``events``: extra event records (dicts with ``time`` in ``[0, 1]``, ``kind``, ...)
    for the event log, e.g. the bids and trades of a market.
    """

    amounts: np.ndarray
    mode: str = "integral"
    result: Result | None = None
    payments: dict | None = None
    prices: dict | None = None
    events: list = field(default_factory=list)


class Policy:
    """Interface of a policy: ``start``, then ``decide`` every round, ``observe`` its outcome, ``finish``."""

    name = "policy"
    #: One line on what the policy does (``laissez-opt simulate --list-policies``).
    summary = ""
    #: Whether the engine verifies the decisions (methods are verified by ``lo.solve``).
    needs_verification = True

    def start(self, base: Instance, seed: int) -> None:
        """Called once before round 0 of a run."""

    def decide(self, view: RoundView) -> Decision:  # pragma: no cover - interface
        raise NotImplementedError

    def observe(self, view: RoundView, outcome: dict) -> None:
        """The round's outcome (per agent ``done``, ``completed``, ``dropped``, ...; event-driven policies react here)."""

    def finish(self) -> None:
        """Called once after the last round."""


class _ContinuingThresholds(ThresholdPolicy):
    """A threshold learner whose episode spans the whole simulation, not one ``lo.solve`` call."""

    def __init__(self, inner: ThresholdPolicy):
        self.inner = inner
        self.name = inner.name

    def thresholds(self, ctx, budgets):
        return self.inner.thresholds(ctx, budgets)

    def observe(self, ctx, budgets, taus, outcome):
        self.inner.observe(ctx, budgets, taus, outcome)

    def describe(self) -> dict:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.end_episode()


_LEARNED = {"hedge", "no_regret", "actor_critic", "ac"}
_LEARNER_OPTIONS = {"eta", "reward", "counterfactual", "gamma", "lr_actor", "lr_critic", "hidden"}


class MethodPolicy(Policy):
    """A registered method solved on every round's view (see the module docstring)."""

    needs_verification = False

    def __init__(self, name: str, method: str, options: dict | None = None, *, verify: bool = True):
        self.name = name
        self.method = method
        self.options = dict(options or {})
        self.verify = verify
        self.state = None
        self.learner: _ContinuingThresholds | None = None
        self.infeasible_rounds = 0

    def start(self, base: Instance, seed: int) -> None:
        self.state = None
        self.learner = None
        self.seed = seed
        self.infeasible_rounds = 0

    def _mtf_options(self, view: RoundView, options: dict) -> dict:
        spec = options.get("threshold")
        if not (isinstance(spec, str) and spec.strip().lower().replace("-", "_") in _LEARNED):
            return options
        if self.learner is None:
            learner_options = {k: options[k] for k in _LEARNER_OPTIONS if k in options}
            seed = options.get("seed", self.seed)
            self.learner = _ContinuingThresholds(make_threshold_policy(spec, view.instance, seed=seed, **learner_options))
        rest = {k: v for k, v in options.items() if k not in _LEARNER_OPTIONS}
        rest["threshold"] = self.learner
        return rest

    def decide(self, view: RoundView) -> Decision:
        from ..api import solve

        options = dict(self.options)
        if self.method == "mtf":
            options = self._mtf_options(view, options)
        if self.state is None and self.method == "fixed_partition":
            # Draw the long-term partition on the instance's demands, not on round 0's queues.
            first = solve(view.with_demands(None), self.method, check=self.verify, **options)
            self.state = first.details.get("state")
        if self.state is not None:
            options["state"] = self.state
        result = solve(view.instance, self.method, check=self.verify, **options)
        self.state = result.details.get("state") if result.details else None
        if result.status == "infeasible" or result.amounts is None:
            self.infeasible_rounds += 1  # the method found no allocation: the devices idle this round
            amounts = np.zeros(view.instance.n_edges)
        else:
            amounts = result.amounts[:, 0]
        return Decision(amounts, result.mode, result, payments=result.payments)

    def finish(self) -> None:
        if self.learner is not None:
            self.learner.close()


class CallablePolicy(Policy):
    """A user function ``f(view)`` returning amounts, a :class:`Result` or a :class:`Decision`."""

    def __init__(self, name: str, function: Callable, options: dict | None = None):
        self.name = name
        self.function = function
        self.options = dict(options or {})

    def decide(self, view: RoundView) -> Decision:
        out = self.function(view, **self.options)
        if isinstance(out, Decision):
            return out
        if isinstance(out, Result):
            amounts = out.amounts[:, 0] if out.amounts is not None else np.zeros(view.instance.n_edges)
            return Decision(amounts, out.mode, out, payments=out.payments)
        amounts = np.asarray(out, dtype=np.float64).reshape(-1)
        if amounts.shape != (view.instance.n_edges,):
            raise InputError(f"policy {self.name!r} returned {amounts.size} amounts for {view.instance.n_edges} edges",
                             path=self.name)
        integral = bool(np.all(np.abs(amounts - np.round(amounts)) < 1e-9))
        return Decision(amounts, "integral" if integral else "fractional")


@dataclass(frozen=True)
class PolicyFactory:
    """How to build one policy for one run: picklable (it travels to worker processes)."""

    name: str
    kind: str  # "method", "builtin", "class", "instance", "function"
    target: Any
    options: dict
    #: A method registered with ``lo.register_method`` in the parent exists in no worker: it travels here.
    method_spec: Any = field(default=None, compare=False, repr=False)

    def build(self, *, verify: bool = True) -> Policy:
        if self.kind == "method":
            if self.method_spec is not None and self.target not in METHODS:
                register_method(self.method_spec)
            return MethodPolicy(self.name, self.target, self.options, verify=verify)
        if self.kind in ("builtin", "class"):
            try:
                policy = self.target(**self.options)
            except TypeError as exc:  # an unknown or missing option of the policy's constructor
                raise InputError(f"policy {self.name!r}: {exc}", path=self.name) from None
        elif self.kind == "instance":
            policy = copy.deepcopy(self.target)
        else:
            return CallablePolicy(self.name, self.target, self.options)
        policy.name = self.name
        return policy


_USER: dict[str, tuple[str, Any]] = {}


def _builtins() -> dict[str, type]:
    from .market.policy import MarketPolicy
    from .market.replay import OptimumPolicy, ReplayPolicy
    from .min_backlog import MinBacklogPolicy

    return {"min_backlog": MinBacklogPolicy, "market": MarketPolicy, "optimum": OptimumPolicy, "replay": ReplayPolicy}


def policy_names() -> list[str]:
    """Every name a policy may run: registered methods, simulator policies, user policies.

    >>> {"welfare", "mtf", "min_backlog"} <= set(policy_names())
    True
    """
    return sorted(set(METHODS) | set(_builtins()) | set(_USER))


def simulator_policies() -> list[dict]:
    """The policies only the simulator runs, beside every method: name, summary and options with defaults.

    >>> [p["name"] for p in simulator_policies()]
    ['market', 'min_backlog', 'optimum', 'replay']
    >>> next(p for p in simulator_policies() if p["name"] == "optimum")["options"]
    {'objective': 'cost', 'time_limit': 60.0}
    """
    rows = []
    for name, cls in sorted(_builtins().items()):
        options = {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                   if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD}
        rows.append({"name": name, "summary": cls.summary, "options": options})
    return rows


def register_policy(name: str, policy, *, replace: bool = False) -> None:
    """Make ``policy`` available under ``name``: a :class:`Policy` subclass (built with the
    policy's options as keyword arguments), a :class:`Policy` instance (copied for every run)
    or a function ``f(view, **options) -> amounts | Result | Decision``.

    For parallel runs the object must be importable by name (a module-level class or
    function), like anything a process pool pickles.

    >>> register_policy("idle", lambda view: [0.0] * view.instance.n_edges)
    >>> registered_policies()["idle"], "idle" in policy_names()
    ('function', True)
    >>> unregister_policy("idle")
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"a policy name is a non-empty string, got {name!r}", path="name")
    if name in METHODS or name in _builtins():
        raise InputError(f"{name!r} is a method or simulator policy; choose another name", path="name")
    if name in _USER and not replace:
        raise InputError(f"policy {name!r} is already registered (pass replace=True)", path="name")
    if inspect.isclass(policy) and issubclass(policy, Policy):
        _USER[name] = ("class", policy)
    elif isinstance(policy, Policy):
        _USER[name] = ("instance", policy)
    elif callable(policy):
        _USER[name] = ("function", policy)
    else:
        raise InputError(f"a policy is a Policy subclass or instance or a function, got {policy!r}", path=name)


def unregister_policy(name: str) -> None:
    """Forget a user policy (no error if unknown)."""
    _USER.pop(name, None)


def registered_policies() -> dict[str, str]:
    """User policies and their kinds."""
    return {name: kind for name, (kind, _) in sorted(_USER.items())}


def resolve(method: str, options: dict, *, name: str | None = None) -> PolicyFactory:
    """The factory of policy ``method`` (user policies first, then simulator policies, then methods).

    >>> resolve("mtf", {"threshold": "hedge"}, name="mtf-hedge")
    PolicyFactory(name='mtf-hedge', kind='method', target='mtf', options={'threshold': 'hedge'})
    >>> resolve("min_backlog", {}).kind
    'builtin'
    """
    label = name or method
    if method in _USER:
        kind, target = _USER[method]
        return PolicyFactory(label, kind, target, dict(options))
    builtins = _builtins()
    if method in builtins:
        return PolicyFactory(label, "builtin", builtins[method], dict(options))
    if method in METHODS:
        return PolicyFactory(label, "method", method, dict(options), registered_at_runtime(method))
    raise InputError(f"unknown policy {method!r}; known: {', '.join(policy_names())}", path="policies")


