"""Threshold policies for Most-Token-First: fixed, Hedge (no-regret) and actor-critic.

``models.md`` item 7; thesis 002, section 4.2.  Each round every present agent reports a
threshold ``tau_i`` from the grid ``U = {0.0, 0.1, ..., 0.9}`` (learned policies) or any
``tau >= 0`` (fixed); MTF spends a token on a device only if its normalised utility
``u~_{i,c,r} >= tau_i`` (see :mod:`laissez_opt.heuristics.mtf` for the normalisation).
Learning runs over the rounds of the instance and, with ``episodes > 1``, across
repetitions of the horizon.  All randomness comes from ``numpy.random.default_rng(seed)``:
a run is a deterministic function of the instance, the options and the seed.

``fixed``
    ``tau`` for every agent and round (default 0: with ``tau = 0`` MTF spends a token on
    every device it can), or one per agent, or one per agent and round.

``hedge`` (thesis 4.2.1, eq. 4.2, Algorithm 2)
    One learner per agent and budget state ``B_i^r`` (created on first visit), each a
    Hedge distribution over ``U``.  The reward of threshold ``tau`` in round ``r`` is

        ``R_i^{tau,r} = sum_{c in C_i^{tau,r}} u~_{i,c,r} - E[u~_i^r] B_i^{r+1}(tau)``   (eq. 4.2)

    with ``C_i^{tau,r}`` the devices the agent would have received and ``B_i^{r+1}(tau)`` its
    budget after redistribution, had it reported ``tau`` (others unchanged), and
    ``E[u~_i^r]`` the mean normalised utility over all devices of the round (0 off
    edges).  ``reward="thesis"`` (default) uses the equation as printed, which charges
    the agent for tokens it keeps and so favours spending; ``reward="token_value"``
    flips that term's sign (a kept token is worth ``E[u~]``), the economically usual
    reading.  Counterfactual rewards: ``counterfactual="resimulate"`` (default, exact)
    reruns the round with only this agent's threshold changed; thresholds that select
    the same prefix of the agent's preference list behave identically, so at most one
    rerun per distinct prefix (<= 10 per agent and round).  ``"approximate"`` (cheap,
    ``O(|U|)`` per agent) keeps the observed allocation and only removes the token-phase
    devices below a higher ``tau`` (adding the saved tokens minus the agent's weight
    share of them to its budget); it cannot see devices a lower ``tau`` would have won.
    Each round's rewards are min-max scaled to ``[0, 1]`` across ``U`` (all zero if equal)
    and added to the learner's cumulative rewards ``S``; the threshold is drawn with
    probability ``prop. exp(eta_t S_tau)``, ``eta_t = sqrt(8 ln|U| / t)`` after ``t``
    updates of that learner (option ``eta`` fixes it).

``actor_critic`` (thesis 4.2.2, eqs. 4.3-4.7)
    Per agent two small networks (one ``tanh`` hidden layer, ``hidden`` units, default
    16): the actor maps the state to a softmax over ``U``, the critic to ``V(s)``.  State
    ``s_i^r = (B_i^r, u~_i^r)`` is summarised as 12 features: ``B_i^r / T`` (``T`` the total
    tokens), ``E[u~_i^r]``, and the shares of the round's devices whose ``u~_{i,c,r}``
    falls in each of the ten bins ``[k/10, (k+1)/10)``.  Reward ``R_i^r = sum_{c in C_i^r}
    u~_{i,c,r}`` (eq. 4.3); TD error ``delta = R + gamma V(s') - V(s)`` (eq. 4.5, ``V = 0`` after
    the agent's last round or the episode's end); the critic descends ``delta^2`` (eq. 4.6,
    semi-gradient, rate ``lr_critic``), the actor descends ``-log pi(tau|s) delta`` (eq. 4.7,
    rate ``lr_actor``).  The update for round ``r`` happens when ``s^{r+1}`` is seen.
    Defaults ``gamma = 0.9``, ``lr_actor = 0.05``, ``lr_critic = 0.1``; weights drawn from
    the seeded generator (first layer ``N(0, 1/F)``, output layers ``N(0, 0.01^2)``, so the
    first policy is near uniform).

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("g", count=2)], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "g", (0.2, 0.9)), lo.Edge("B", "g", (0.8, 0.3))], rounds=2)
>>> res = lo.solve(inst, "mtf", threshold="hedge", seed=1)
>>> res.details["threshold_policy"]["name"], len(res.details["rounds"][0]["thresholds"])
('hedge', 2)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from numbers import Real

import numpy as np

from ..errors import InputError

__all__ = [
    "GRID",
    "ThresholdPolicy",
    "FixedThresholds",
    "HedgeThresholds",
    "ActorCriticThresholds",
    "make_policy",
]

#: The threshold grid ``U`` of thesis 4.2.1.
GRID: tuple[float, ...] = tuple(k / 10 for k in range(10))


class ThresholdPolicy:
    """Interface: ``thresholds(ctx, budgets) -> tau per agent``, then ``observe(...)`` the round.

    ``ctx`` is a :class:`laissez_opt.heuristics.mtf.RoundContext` (present agents, preference
    lists, ``mean_score``, ``histogram``, and ``simulate(taus)`` to rerun the round).
    """

    name = "policy"

    def start_episode(self) -> None:
        """Called before round 0 of every episode."""

    def end_episode(self) -> None:
        """Called after the last round of every episode."""

    def thresholds(self, ctx, budgets: list[int]) -> list[float]:  # pragma: no cover - interface
        raise NotImplementedError

    def observe(self, ctx, budgets: list[int], taus: list[float], outcome) -> None:
        """Learn from the round's outcome (fixed thresholds ignore it)."""

    def describe(self) -> dict:
        return {"name": self.name}


class FixedThresholds(ThresholdPolicy):
    """Thresholds given in advance: ``table[i, r]`` (an ``n x R`` array of ``tau >= 0``).

    >>> FixedThresholds(np.array([[0.1, 0.2], [0.3, 0.4]])).thresholds(type("C", (), {"round": 1})(), [0, 0])
    [0.2, 0.4]
    """

    name = "fixed"

    def __init__(self, table: np.ndarray):
        self.table = np.asarray(table, dtype=float)

    def thresholds(self, ctx, budgets):
        return self.table[:, ctx.round].tolist()

    def describe(self) -> dict:
        flat = np.unique(self.table)
        tau = float(flat[0]) if flat.size == 1 else self.table.tolist()
        return {"name": "fixed", "tau": tau}


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _draw(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling of one index per row of ``probs`` with uniforms ``u``."""
    cdf = np.cumsum(probs, axis=-1)
    return np.minimum((cdf < u[:, None]).sum(axis=-1), probs.shape[-1] - 1)


class HedgeThresholds(ThresholdPolicy):
    """Hedge over ``U`` with one learner per (agent, budget state); reward eq. 4.2.

    >>> h = HedgeThresholds(seed=0)
    >>> h.probabilities(0, 5).round(2).tolist() == [0.1] * 10
    True
    """

    name = "hedge"

    def __init__(self, *, seed: int = 0, grid=GRID, eta: float | None = None,
                 reward: str = "thesis", counterfactual: str = "resimulate"):
        self.grid = tuple(grid)
        self.eta = eta
        self.reward = reward
        self.counterfactual = counterfactual
        self.rng = np.random.default_rng(seed)
        self.learners: dict[tuple[int, int], list] = {}

    def _learner(self, i: int, budget: int) -> list:
        key = (i, int(budget))
        if key not in self.learners:
            self.learners[key] = [np.zeros(len(self.grid)), 0]
        return self.learners[key]

    def probabilities(self, i: int, budget: int) -> np.ndarray:
        """The learner ``(i, B)``'s current distribution over ``U``."""
        cum, t = self._learner(i, budget)
        eta = self.eta if self.eta is not None else math.sqrt(8 * math.log(len(self.grid)) / max(t, 1))
        return _softmax(eta * cum)

    def thresholds(self, ctx, budgets):
        taus = [0.0] * ctx.n_agents
        active = ctx.active
        if not active:
            return taus
        probs = np.array([self.probabilities(i, budgets[i]) for i in active])
        picks = _draw(probs, self.rng.random(len(active)))
        for i, k in zip(active, picks.tolist()):
            taus[i] = self.grid[k]
        return taus

    def _rewards(self, ctx, i: int, taus, out) -> np.ndarray:
        score = ctx.prefs.score
        mean = float(ctx.mean_score[i])
        sign = -1.0 if self.reward == "thesis" else 1.0
        rewards = np.empty(len(self.grid))
        if self.counterfactual == "resimulate":
            neg = [-s for s in ctx.prefs.scores_of(i)]
            cache = {bisect_right(neg, -taus[i]): out}
            for k, tau in enumerate(self.grid):
                key = bisect_right(neg, -tau)
                if key not in cache:
                    changed = list(taus)
                    changed[i] = tau
                    cache[key] = ctx.simulate(changed)
                o = cache[key]
                rewards[k] = o.reward(i, score) + sign * mean * o.budgets[i]
            return rewards
        token = [score[p] for a, p in zip(out.picks_agent[: out.n_token], out.picks_pos[: out.n_token]) if a == i]
        rest = sum(score[p] for a, p in zip(out.picks_agent[out.n_token:], out.picks_pos[out.n_token:]) if a == i)
        present = ctx.active
        share = ctx.int_weights[i] / sum(ctx.int_weights[j] for j in present)
        for k, tau in enumerate(self.grid):
            if tau <= taus[i]:
                kept, saved = sum(token), 0
            else:
                kept = sum(s for s in token if s >= tau)
                saved = sum(1 for s in token if s < tau)
            budget = out.budgets[i] + saved * (1.0 - share)
            rewards[k] = kept + rest + sign * mean * budget
        return rewards

    def observe(self, ctx, budgets, taus, out):
        for i in ctx.active:
            rewards = self._rewards(ctx, i, taus, out)
            lo, hi = rewards.min(), rewards.max()
            scaled = (rewards - lo) / (hi - lo) if hi > lo else np.zeros_like(rewards)
            learner = self._learner(i, budgets[i])
            learner[0] += scaled
            learner[1] += 1

    def describe(self) -> dict:
        return {"name": "hedge", "grid": list(self.grid), "eta": self.eta, "reward": self.reward,
                "counterfactual": self.counterfactual, "learners": len(self.learners)}


class ActorCriticThresholds(ThresholdPolicy):
    """TD(0) actor-critic over ``U`` with per-agent one-hidden-layer networks (eqs. 4.3-4.7).

    >>> ac = ActorCriticThresholds(n_agents=2, seed=0)
    >>> ac.policy(np.zeros((1, ac.FEATURES)), np.array([0])).shape
    (1, 10)
    """

    name = "actor_critic"
    FEATURES = 12

    def __init__(self, *, n_agents: int, seed: int = 0, grid=GRID, hidden: int = 16,
                 gamma: float = 0.9, lr_actor: float = 0.05, lr_critic: float = 0.1):
        self.grid = tuple(grid)
        self.gamma, self.lr_actor, self.lr_critic, self.hidden = gamma, lr_actor, lr_critic, hidden
        rng = np.random.default_rng(seed)
        self.rng = rng
        n, h, f, k = n_agents, hidden, self.FEATURES, len(self.grid)
        scale = 1.0 / math.sqrt(f)
        self.a1 = rng.normal(0, scale, (n, h, f))
        self.a1b = np.zeros((n, h))
        self.a2 = rng.normal(0, 0.01, (n, k, h))
        self.a2b = np.zeros((n, k))
        self.c1 = rng.normal(0, scale, (n, h, f))
        self.c1b = np.zeros((n, h))
        self.c2 = rng.normal(0, 0.01, (n, h))
        self.c2b = np.zeros(n)
        self.pending: dict[int, tuple[np.ndarray, int, float]] = {}
        self._last: dict[int, tuple[np.ndarray, int]] = {}
        self.updates = 0

    # networks (batched over agents ``idx``, features ``x`` of shape ``k x F``)
    def _actor(self, x, idx):
        hid = np.tanh(np.einsum("khf,kf->kh", self.a1[idx], x) + self.a1b[idx])
        return hid, _softmax(np.einsum("kah,kh->ka", self.a2[idx], hid) + self.a2b[idx])

    def _critic(self, x, idx):
        hid = np.tanh(np.einsum("khf,kf->kh", self.c1[idx], x) + self.c1b[idx])
        return hid, np.einsum("kh,kh->k", self.c2[idx], hid) + self.c2b[idx]

    def policy(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``pi(. | s)`` for agents ``idx`` with state features ``x``."""
        return self._actor(x, idx)[1]

    def value(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``V(s)`` for agents ``idx``."""
        return self._critic(x, idx)[1]

    def features(self, ctx, budgets, idx: np.ndarray) -> np.ndarray:
        b = np.array([budgets[i] for i in idx.tolist()], dtype=float) / max(1, ctx.total_tokens)
        return np.column_stack([b, ctx.mean_score[idx], ctx.histogram[idx]])

    def _update(self, idx, x, action, reward, v_next):
        hc, v = self._critic(x, idx)
        delta = reward + self.gamma * v_next - v  # eq. 4.5
        # critic: minimise delta^2 (eq. 4.6) by a semi-gradient step along delta * grad V
        gh = self.c2[idx] * (1 - hc**2) * delta[:, None]
        self.c2[idx] += self.lr_critic * delta[:, None] * hc
        self.c2b[idx] += self.lr_critic * delta
        self.c1[idx] += self.lr_critic * gh[:, :, None] * x[:, None, :]
        self.c1b[idx] += self.lr_critic * gh
        # actor: minimise -log pi(a|s) delta (eq. 4.7)
        ha, pi = self._actor(x, idx)
        gz = -pi
        gz[np.arange(len(idx)), action] += 1.0
        gz *= delta[:, None]
        gha = np.einsum("kah,ka->kh", self.a2[idx], gz) * (1 - ha**2)
        self.a2[idx] += self.lr_actor * gz[:, :, None] * ha[:, None, :]
        self.a2b[idx] += self.lr_actor * gz
        self.a1[idx] += self.lr_actor * gha[:, :, None] * x[:, None, :]
        self.a1b[idx] += self.lr_actor * gha
        self.updates += len(idx)

    def _flush(self, next_x: dict[int, np.ndarray]):
        if not self.pending:
            return
        agents = sorted(self.pending)
        idx = np.array(agents)
        x = np.array([self.pending[i][0] for i in agents])
        action = np.array([self.pending[i][1] for i in agents])
        reward = np.array([self.pending[i][2] for i in agents])
        v_next = np.zeros(len(agents))
        cont = [k for k, i in enumerate(agents) if i in next_x]
        if cont:
            xn = np.array([next_x[agents[k]] for k in cont])
            v_next[cont] = self.value(xn, idx[cont])
        self.pending = {}
        self._update(idx, x, action, reward, v_next)

    def thresholds(self, ctx, budgets):
        taus = [0.0] * ctx.n_agents
        idx = np.array(ctx.active, dtype=np.int64)
        x = self.features(ctx, budgets, idx) if len(idx) else np.zeros((0, self.FEATURES))
        self._flush({i: x[k] for k, i in enumerate(idx.tolist())})
        self._last = {}
        if not len(idx):
            return taus
        picks = _draw(self.policy(x, idx), self.rng.random(len(idx)))
        for k, (i, a) in enumerate(zip(idx.tolist(), picks.tolist())):
            taus[i] = self.grid[a]
            self._last[i] = (x[k], a)
        return taus

    def observe(self, ctx, budgets, taus, out):
        score = ctx.prefs.score
        reward = dict.fromkeys(self._last, 0.0)
        for a, p in zip(out.picks_agent, out.picks_pos):
            reward[a] += score[p]  # eq. 4.3
        for i, (x, a) in self._last.items():
            self.pending[i] = (x, a, reward[i])

    def end_episode(self):
        self._flush({})

    def describe(self) -> dict:
        return {"name": "actor_critic", "grid": list(self.grid), "hidden": self.hidden, "gamma": self.gamma,
                "lr_actor": self.lr_actor, "lr_critic": self.lr_critic, "updates": self.updates}


_HEDGE_OPTS = {"eta", "reward", "counterfactual"}
_AC_OPTS = {"gamma", "lr_actor", "lr_critic", "hidden"}


def _tau(value, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
        raise InputError(f"a threshold is a finite number >= 0, got {value!r}", path=path)
    return float(value)


def _positive(value, name: str, *, upper: float | None = None, integer: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(value) and value > 0
    if ok and upper is not None:
        ok = value <= upper
    if ok and integer:
        ok = float(value).is_integer()
    if not ok:
        bound = f" and <= {upper:g}" if upper is not None else ""
        kind = "an integer" if integer else "a number"
        raise InputError(f"{name} must be {kind} > 0{bound}, got {value!r}", path=f"option {name}")
    return int(value) if integer else float(value)


def make_policy(spec, instance, *, seed: int = 0, **options) -> ThresholdPolicy:
    """The threshold policy named by ``spec`` (the ``threshold`` option of ``mtf``).

    ``spec``: ``None``/``"fixed"`` (``tau = 0``), ``"fixed:0.3"`` or a number, a mapping
    ``{agent id: tau or [tau per round]}`` (agents left out get 0), an ``n`` or ``n x R``
    array, ``"hedge"``, ``"actor_critic"``, or a :class:`ThresholdPolicy` object.

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("g")], [lo.Agent("A"), lo.Agent("B")], [], rounds=2)
    >>> make_policy({"B": [0.5, 0.7]}, inst).table.tolist()
    [[0.0, 0.0], [0.5, 0.7]]
    """
    n, rounds = instance.n_agents, instance.rounds
    if isinstance(spec, ThresholdPolicy):
        return spec
    kind = "fixed"
    table = np.zeros((n, rounds))
    if spec is None:
        spec = "fixed"  # the default: tau = 0 for every agent and round
    if isinstance(spec, str):
        text = spec.strip().lower().replace("-", "_")
        if text in ("hedge", "no_regret"):
            kind = "hedge"
        elif text in ("actor_critic", "ac"):
            kind = "actor_critic"
        elif text == "fixed":
            table[:] = 0.0
        elif text.startswith("fixed:"):
            try:
                value = float(text[6:])
            except ValueError:
                raise InputError(f"cannot read a threshold from {spec!r}", path="option threshold") from None
            table[:] = _tau(value, "option threshold")
        else:
            try:
                table[:] = _tau(float(text), "option threshold")
            except ValueError:
                raise InputError(
                    f"unknown threshold policy {spec!r}: fixed, fixed:<tau>, hedge or actor_critic", path="option threshold"
                ) from None
    elif isinstance(spec, Real) and not isinstance(spec, bool):
        table[:] = _tau(spec, "option threshold")
    elif isinstance(spec, dict):
        index = instance.agent_index
        for agent_id, value in spec.items():
            if agent_id not in index:
                raise InputError(f"unknown agent id {agent_id!r}", path=f"option threshold.{agent_id}")
            i = index[agent_id]
            if isinstance(value, (list, tuple, np.ndarray)):
                if len(value) != rounds:
                    raise InputError(f"needs {rounds} thresholds (one per round), got {len(value)}", path=f"option threshold.{agent_id}")
                table[i] = [_tau(v, f"option threshold.{agent_id}[{r}]") for r, v in enumerate(value)]
            else:
                table[i] = _tau(value, f"option threshold.{agent_id}")
    elif isinstance(spec, (list, tuple, np.ndarray)):
        arr = np.asarray(spec, dtype=float)
        if arr.shape == (n,):
            arr = np.repeat(arr[:, None], rounds, axis=1)
        if arr.shape != (n, rounds):
            raise InputError(f"a threshold array has shape ({n},) or ({n}, {rounds}), got {arr.shape}", path="option threshold")
        for value in arr.ravel().tolist():
            _tau(value, "option threshold")
        table = arr
    else:
        raise InputError(f"cannot read a threshold policy from {spec!r}", path="option threshold")

    allowed = {"fixed": set(), "hedge": _HEDGE_OPTS, "actor_critic": _AC_OPTS}[kind]
    extra = sorted(set(options) - allowed)
    if extra:
        raise InputError(f"option {extra[0]!r} does not apply to the {kind} threshold policy", path=f"option {extra[0]}")
    if kind == "fixed":
        return FixedThresholds(table)
    if kind == "hedge":
        reward = options.get("reward", "thesis")
        if reward not in ("thesis", "token_value"):
            raise InputError(f"reward must be thesis or token_value, got {reward!r}", path="option reward")
        cf = options.get("counterfactual", "resimulate")
        if cf not in ("resimulate", "approximate"):
            raise InputError(f"counterfactual must be resimulate or approximate, got {cf!r}", path="option counterfactual")
        eta = options.get("eta")
        if eta is not None:
            eta = _positive(eta, "eta")
        return HedgeThresholds(seed=seed, eta=eta, reward=reward, counterfactual=cf)
    return ActorCriticThresholds(
        n_agents=n,
        seed=seed,
        hidden=_positive(options.get("hidden", 16), "hidden", integer=True),
        gamma=_positive(options.get("gamma", 0.9), "gamma", upper=1.0),
        lr_actor=_positive(options.get("lr_actor", 0.05), "lr_actor"),
        lr_critic=_positive(options.get("lr_critic", 0.1), "lr_critic"),
    )
