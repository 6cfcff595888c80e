"""Exact certificates of LP-based results and the checker a reviewer can run (``lo.certify``, ``laissez-opt certify``).

A result is *proven* when a certificate, checked in rational arithmetic against
the instance's decimal numbers (:mod:`laissez_opt.analysis.rational`), shows
what the result claims, and the result's numbers agree with the certificate's
exact ones.  A certificate lists one or more linear programs of
:mod:`laissez_opt.analysis.exact_models`, each with a primal solution and row
multipliers; :meth:`ExactLP.verify <laissez_opt.analysis.exact_lp.ExactLP.verify>`
checks primal feasibility, dual feasibility and equal objectives, so each LP's
optimum is known exactly.  What the LPs prove together depends on the claim:

* ``welfare`` (and ``fair_welfare``, fractional): one LP; its optimum is the
  result's objective, and the certified allocation reaches it.
* ``vcg``: the welfare LP on bids (``W*``) and one LP without each winner
  ``i`` (``W*_{-i}``); the Clarke payments ``p_i = W*_{-i} - (W* - v_i(x*))``
  follow exactly (losers: ``W*_{-i} = W*``, ``p_i = 0``, since ``x*`` stays
  feasible without them).
* ``maxmin`` (fractional): the waterfilling LPs.  LP ``l`` maximises the level
  ``t`` of the free agents with the frozen ones held at their levels; its
  multipliers prove ``t <= t_l``, and every free agent whose ``level`` row has a
  nonzero multiplier is tight in every allocation reaching ``t_l``
  (complementary slackness), so it is frozen at ``t_l``.  The certified
  allocation is feasible for every LP at its level and gives every agent its
  level: it is the leximin allocation, and the levels are the leximin values
  (unique in the fractional setting; Radunovic & Le Boudec, 2007).
* ``themis`` (fractional): ``F(rho) = max delta`` (:func:`~laissez_opt.analysis.exact_models.themis_lp`)
  at the ends of the result's bracket: ``F(hi) >= 0`` proves ``rho* <= hi`` and
  ``F(lo) <= 0`` proves ``rho* >= lo``.  When every bidder has ``t_i = 0`` a
  level LP over ``r_i = X_i / X^id_i`` also gives ``rho* = 1 / max min r_i`` exactly.
* ``pareto`` (any allocation ``x``): ``max sum_i s_i`` subject to ``U_i(y) - s_i =
  U_i(x)``; optimum 0 proves ``x`` Pareto-efficient among time-sharing
  allocations, hence also among integral ones; a positive optimum comes with
  the improving ``y``.

Building a certificate uses HiGHS only to find bases; each basis is solved again
in rationals (:func:`~laissez_opt.analysis.exact_lp.solve_exact`), which repairs a
floating-point optimum whose numbers are slightly off.  Checking a certificate
(:func:`check_certificate`) uses no solver at all.

References: Chvatal, *Linear Programming* (1983), ch. 5 (duality, complementary
slackness); Applegate, Cook, Dash & Espinoza, "Exact solutions to linear
programming problems", Oper. Res. Lett. 35 (2007) (rational basis re-solves);
thesis 002, eqs. 3.3-3.6; ``models.md`` items 1-5.

Example
-------
>>> import laissez_opt as lo
>>> inst = lo.Instance([lo.Pool("A10")], [lo.Agent("A"), lo.Agent("B")],
...                    [lo.Edge("A", "A10", 0.9), lo.Edge("B", "A10", 0.5)], name="toy")
>>> report = certify(inst, lo.solve(inst, "welfare"))
>>> report.proven, report.exact["optimum"]
(True, '9/10')
>>> wrong = lo.solve(inst, "greedy"); wrong.method = "welfare"; wrong.objective = 0.5
>>> wrong.allocation = [{"agent": "B", "pool": "A10", "round": 0, "amount": 1.0}]
>>> report = certify(inst, wrong)
>>> report.proven, report.failure
(False, 'objective: the result reports 0.5 but the exact optimum is 9/10 (0.9)')
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..instance import Instance
from ..result import Result
from .exact_lp import BRIEF_CHARS, ExactLP, Number, Verdict, parse_rational, rational_brief, rational_text, solve_exact
from .exact_models import (
    NORMALIZERS,
    fair_welfare_lp,
    ideal_rates,
    level_lp,
    pareto_lp,
    scales,
    taking_part,
    themis_lags,
    themis_lp,
    utility_terms,
    vcg_lp,
    vcg_values,
    welfare_lp,
)
from .rational import ExactInstance, exact_amounts, exact_instance

__all__ = [
    "CERTIFICATE_FORMAT",
    "CLAIMS",
    "LPEntry",
    "Certificate",
    "CertificateCheck",
    "CertifyReport",
    "make_certificate",
    "check_certificate",
    "certify",
]

CERTIFICATE_FORMAT = "laissez-opt/certificate"
#: What ``certify`` can prove: the optimality claim of an LP-based method, or Pareto efficiency of any allocation.
CLAIMS = ("auto", "optimal", "pareto")
#: Methods whose results certify proves optimal, and the modes it covers.
LP_METHODS = {"welfare": ("integral", "fractional"), "vcg": ("integral", "fractional"),
              "maxmin": ("fractional",), "themis": ("fractional",), "fair_welfare": ("fractional",)}


class _NotProven(Exception):
    """Raised inside the builders when no certificate can be produced (the message says why)."""


def _q(value) -> Number:
    value = Fraction(value)
    return int(value) if value.denominator == 1 else value


#: Marks a number the result does not report.
_ABSENT = object()


def _show(value: Number) -> str:
    """``p/q (decimal)`` for a person: the exact value and a rounded one (a long fraction: its float and size)."""
    text = rational_text(value)
    if len(text) > BRIEF_CHARS:
        return rational_brief(value)
    return text if Fraction(value).denominator == 1 else f"{text} ({float(value):.12g})"


# --------------------------------------------------------------------------- certificate records
@dataclass
class LPEntry:
    """One LP of a certificate: its kind and parameters (which LP), a primal solution and row multipliers.

    ``primal`` and ``dual`` map column and row names to exact numbers (zeros
    left out).  With ``shared`` the LP's ``x`` block is the certificate's
    allocation and ``primal`` holds only the other columns.
    """

    kind: str
    parameters: dict
    primal: dict[str, Number]
    dual: dict[str, Number]
    value: Number
    shared: bool = True

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "parameters": self.parameters,
            "value": rational_text(self.value),
            "allocation": "shared" if self.shared else "own",
            "primal": {k: rational_text(v) for k, v in self.primal.items()},
            "dual": {k: rational_text(v) for k, v in self.dual.items()},
        }

    @classmethod
    def from_dict(cls, data: dict, where: str, source: str | None) -> "LPEntry":
        try:
            return cls(
                kind=str(data["kind"]),
                parameters=dict(data.get("parameters") or {}),
                primal={str(k): parse_rational(v) for k, v in (data.get("primal") or {}).items()},
                dual={str(k): parse_rational(v) for k, v in (data.get("dual") or {}).items()},
                value=parse_rational(data["value"]),
                shared=data.get("allocation", "shared") == "shared",
            )
        except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
            raise InputError(f"malformed LP record: {exc}", source=source, path=where) from None


@dataclass
class Certificate:
    """A certificate file (``format: laissez-opt/certificate``): the claim, the allocation, the LPs and the exact values."""

    instance: str
    method: str
    claim: str
    allocation: dict[str, Number]
    lps: list[LPEntry]
    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "format": CERTIFICATE_FORMAT,
            "version": 1,
            "instance": self.instance,
            "method": self.method,
            "claim": self.claim,
            "numbers": "exact rationals written p/q",
            "values": _text_values(self.values),
            "allocation": {k: rational_text(v) for k, v in self.allocation.items()},
            "lps": [entry.to_dict() for entry in self.lps],
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "Certificate":
        if not isinstance(data, dict) or data.get("format") != CERTIFICATE_FORMAT:
            raise InputError(f"not a certificate file (format {CERTIFICATE_FORMAT!r} expected)", source=source,
                             path="$.format")
        if data.get("version") != 1:
            raise InputError(f"unsupported certificate version {data.get('version')!r} (1 expected)", source=source,
                             path="$.version")
        for key in ("instance", "method", "claim", "lps"):
            if key not in data:
                raise InputError(f"missing field {key!r}", source=source, path=f"$.{key}")
        if not isinstance(data["lps"], list) or not data["lps"]:
            raise InputError("lps must be a non-empty list", source=source, path="$.lps")
        try:
            allocation = {str(k): parse_rational(v) for k, v in (data.get("allocation") or {}).items()}
        except (TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
            raise InputError(f"malformed allocation: {exc}", source=source, path="$.allocation") from None
        lps = [LPEntry.from_dict(entry, f"$.lps[{k}]", source) for k, entry in enumerate(data["lps"])]
        return cls(str(data["instance"]), str(data["method"]), str(data["claim"]), allocation, lps,
                   _parse_values(data.get("values") or {}), list(data.get("notes") or []))


def _text_values(values):
    if isinstance(values, dict):
        return {k: _text_values(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [_text_values(v) for v in values]
    if isinstance(values, (int, Fraction)) and not isinstance(values, bool):
        return rational_text(values)
    return values


def _parse_values(values):
    if isinstance(values, dict):
        return {k: _parse_values(v) for k, v in values.items()}
    if isinstance(values, list):
        return [_parse_values(v) for v in values]
    if isinstance(values, str):
        try:
            return parse_rational(values)
        except (ValueError, ZeroDivisionError):
            return values
    return values


# --------------------------------------------------------------------------- LPs by kind
def _agent_ids(ex: ExactInstance) -> list[str]:
    return [a.id for a in ex.instance.agents]


def _agent(ex: ExactInstance, agent_id) -> int:
    try:
        return ex.instance.agent_index[agent_id]
    except (KeyError, TypeError):
        raise _NotProven(f"unknown agent {agent_id!r}") from None


def build_lp(ex: ExactInstance, entry: LPEntry) -> ExactLP:
    """The LP an entry names, rebuilt from the instance (:mod:`laissez_opt.analysis.exact_models`)."""
    p = entry.parameters
    try:
        if entry.kind == "welfare":
            return welfare_lp(ex)
        if entry.kind == "vcg":
            without = p.get("without")
            return vcg_lp(ex, None if without is None else _agent(ex, without))
        if entry.kind == "level":
            normalizer = p.get("normalizer", "equal_share")
            if normalizer not in NORMALIZERS:
                raise _NotProven(f"unknown normalizer {normalizer!r}")
            frozen = {_agent(ex, a): parse_rational(v) for a, v in p.get("frozen", {}).items()}
            free = [_agent(ex, a) for a in p.get("free", [])]
            return level_lp(ex, scales(ex, normalizer), frozen, free)
        if entry.kind == "themis":
            return themis_lp(ex, parse_rational(p["rho"]), [_agent(ex, a) for a in p["bidders"]])
        if entry.kind == "pareto":
            targets = p["targets"]
            return pareto_lp(ex, [parse_rational(targets[a.id]) for a in ex.instance.agents])
        if entry.kind == "fair_welfare":
            opt = {k: (None if p.get(k) is None else parse_rational(p[k])) for k in ("sharing", "envy", "floor")}
            return fair_welfare_lp(ex, **opt, normalizer=p.get("normalizer", "equal_share"))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise _NotProven(f"LP {entry.kind}: bad parameters ({exc})") from None
    raise _NotProven(f"unknown LP kind {entry.kind!r}")


def _x_names(lp: ExactLP) -> dict[str, int]:
    block = lp.column_blocks["x"]
    return {block.namer(k): block.start + k for k in range(block.size)}


def _nonzero(lp: ExactLP, vector, *, rows: bool, skip_x: bool = False) -> dict[str, Number]:
    name = lp.row_name if rows else lp.column_name
    x = lp.column_blocks["x"]
    out = {}
    for k, v in enumerate(vector):
        if v and not (skip_x and x.start <= k < x.start + x.size):
            out[name(k)] = v
    return out


def _vector_of(amounts: list[list[Number]]) -> list[Number]:
    return [v for row in amounts for v in row]


class _Checker:
    """Rebuilds each LP of a certificate and checks its entry (no solver)."""

    def __init__(self, ex: ExactInstance, cert: Certificate):
        self.ex = ex
        self.cert = cert
        self.x_index: dict[str, int] | None = None
        self.shared_x: list[Number] | None = None

    def _x(self, lp: ExactLP) -> dict[str, int]:
        if self.x_index is None:
            self.x_index = _x_names(lp)
        return self.x_index

    def allocation_vector(self, lp: ExactLP) -> list[Number]:
        if self.shared_x is None:
            index = self._x(lp)
            x = [0] * lp.column_blocks["x"].size
            for name, value in self.cert.allocation.items():
                if name not in index:
                    raise _NotProven(f"allocation: unknown column {name}")
                x[index[name]] = value
            self.shared_x = x
        return self.shared_x

    def check(self, k: int, entry: LPEntry) -> tuple[ExactLP, list[Number], list[Number], Verdict]:
        lp = build_lp(self.ex, entry)
        index = self._x(lp)
        x = [0] * lp.n_cols
        if entry.shared:
            shared = self.allocation_vector(lp)
            x[: len(shared)] = shared
        others = {lp.column_name(j): j for j in range(lp.column_blocks["x"].size, lp.n_cols)}
        for name, value in entry.primal.items():
            j = index.get(name, others.get(name))
            if j is None:
                raise _NotProven(f"LP {k + 1} ({entry.kind}): unknown column {name}")
            x[j] = value
        rows = lp.row_index()
        y = [0] * lp.n_rows
        for name, value in entry.dual.items():
            if name not in rows:
                raise _NotProven(f"LP {k + 1} ({entry.kind}): unknown row {name}")
            y[rows[name]] = value
        verdict = lp.verify(x, y)
        if not verdict.ok:
            raise _NotProven(f"LP {k + 1} ({entry.kind}{_describe(entry)}): {verdict.failure}")
        if verdict.objective != entry.value:
            raise _NotProven(f"LP {k + 1} ({entry.kind}): the certificate states value {rational_text(entry.value)} "
                             f"but its solution has {rational_text(verdict.objective)}")
        return lp, x, y, verdict


def _describe(entry: LPEntry) -> str:
    p = entry.parameters
    if entry.kind == "vcg" and p.get("without") is not None:
        return f" without {p['without']}"
    if entry.kind == "themis":
        return f" at rho = {p.get('rho')}"
    return ""


# --------------------------------------------------------------------------- checking
@dataclass
class CertificateCheck:
    """Outcome of :func:`check_certificate`: ``ok``, the first ``failure`` and the exact ``values`` proven."""

    ok: bool
    failure: str
    values: dict[str, Any]
    lps: list[dict]
    check_s: float = 0.0


def _agent_values(ex: ExactInstance, x: list[Number]) -> list[Number]:
    """``U_i(x)`` per agent from the ``x`` block."""
    R = ex.rounds
    out: list[Number] = [0] * len(ex.weights)
    for e, i in enumerate(ex.edge_agent):
        for r in range(R):
            v = x[e * R + r]
            if v:
                out[i] += ex.utility[e][r] * v
    return out


def check_certificate(instance: Instance, certificate: Certificate | dict, *, ex: ExactInstance | None = None,
                      source: str | None = None) -> CertificateCheck:
    """Check ``certificate`` against ``instance`` in exact arithmetic, without any solver.

    Every LP is rebuilt from the instance, its primal and multipliers are
    checked (:meth:`~laissez_opt.analysis.exact_lp.ExactLP.verify`), and the
    LPs are checked to prove the certificate's claim (module docstring).  The
    exact values proven are returned, recomputed (never read from the file).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)], name="one")
    >>> cert = make_certificate(inst, lo.solve(inst, "vcg"))
    >>> check = check_certificate(inst, cert)
    >>> check.ok, check.values["payments"]          # A pays B's value: the second price
    (True, {'A': Fraction(1, 2), 'B': 0})
    """
    start = time.perf_counter()
    cert = certificate if isinstance(certificate, Certificate) else Certificate.from_dict(certificate, source)
    if cert.instance != instance.name:
        raise InputError(f"the certificate is for instance {cert.instance!r}, not {instance.name!r}",
                         source=source, path="$.instance")
    ex = ex or exact_instance(instance)
    checker = _Checker(ex, cert)
    summaries: list[dict] = []
    try:
        checked = []
        for k, entry in enumerate(cert.lps):
            lp, x, y, verdict = checker.check(k, entry)
            checked.append((entry, lp, x, y, verdict))
            summaries.append({"kind": entry.kind, "parameters": entry.parameters, "value": rational_text(verdict.objective)})
        claim = {"welfare": _claim_optimum, "fair_welfare": _claim_optimum, "vcg": _claim_vcg,
                 "maxmin": _claim_leximin, "themis": _claim_themis, "pareto": _claim_pareto}.get(
            "pareto" if cert.claim == "pareto" else cert.method)
        if claim is None:
            raise _NotProven(f"no claim is known for method {cert.method!r} ({cert.claim})")
        values = claim(ex, cert, checked)
    except _NotProven as exc:
        return CertificateCheck(False, str(exc), {}, summaries, time.perf_counter() - start)
    return CertificateCheck(True, "", values, summaries, time.perf_counter() - start)


def _claim_optimum(ex, cert, checked) -> dict:
    if len(checked) != 1 or checked[0][0].kind != cert.method or not checked[0][0].shared:
        raise _NotProven(f"a {cert.method} certificate holds exactly one {cert.method} LP over its allocation")
    entry, lp, x, y, verdict = checked[0]
    x_block = x[: lp.column_blocks["x"].size]
    utilities = _agent_values(ex, x_block)
    return {"optimum": verdict.objective, "utilities": dict(zip(_agent_ids(ex), utilities)),
            "parameters": entry.parameters}


def _claim_vcg(ex, cert, checked) -> dict:
    ids = _agent_ids(ex)
    main = [c for c in checked if c[0].kind == "vcg" and c[0].parameters.get("without") is None]
    if len(main) != 1 or not main[0][0].shared:
        raise _NotProven("a vcg certificate holds one welfare LP over its allocation (without = null)")
    _, lp, x, _, verdict = main[0]
    welfare = verdict.objective
    size = lp.column_blocks["x"].size
    x_block = x[:size]
    values = vcg_values(ex)
    R = ex.rounds
    value_of = [0] * len(ids)
    holds = [False] * len(ids)
    for e, i in enumerate(ex.edge_agent):
        for r in range(R):
            amount = x_block[e * R + r]
            if amount:
                holds[i] = True
                value_of[i] += values[e][r] * amount
    without = {}
    for entry, _, _, _, v in checked:
        agent = entry.parameters.get("without")
        if entry.kind != "vcg" or agent is None:
            continue
        if agent in without:
            raise _NotProven(f"two LPs without agent {agent}")
        without[agent] = v.objective
    payments, surplus, welfare_without = {}, {}, {}
    for i, agent in enumerate(ids):
        if holds[i]:
            if agent not in without:
                raise _NotProven(f"agent {agent} receives devices but the certificate has no LP without it")
            w = without[agent]
        else:
            w = welfare  # x* stays feasible without a loser and removing an agent never raises the optimum
        welfare_without[agent] = w
        payments[agent] = w - (welfare - value_of[i]) if holds[i] else 0
        surplus[agent] = value_of[i] - payments[agent]
    return {"welfare": welfare, "welfare_without": welfare_without, "payments": payments, "values": dict(zip(ids, value_of)),
            "surplus": surplus}


def _claim_leximin(ex, cert, checked) -> dict:
    ids = _agent_ids(ex)
    if not checked or any(c[0].kind != "level" or not c[0].shared for c in checked):
        raise _NotProven("a maxmin certificate holds level LPs over its allocation")
    normalizer = checked[0][0].parameters.get("normalizer", "equal_share")
    part = taking_part(ex)
    scale = scales(ex, normalizer)
    part = [i for i in part if scale[i] > 0]
    free = set(part)
    frozen: dict[int, Number] = {}
    levels: list[Number] = []
    previous = None
    if not part:
        # Nobody can get a positive utility: every value is 0, and the one LP (no free agent) says t = 0.
        if len(checked) != 1 or checked[0][0].parameters.get("free") or checked[0][0].parameters.get("frozen"):
            raise _NotProven("no agent can get a positive utility; the certificate should hold one empty level LP")
        return {"normalizer": normalizer, "leximin": {a: 0 for a in ids}, "levels": [], "objective": 0,
                "taking_part": []}
    for k, (entry, lp, x, y, verdict) in enumerate(checked):
        p = entry.parameters
        if p.get("normalizer", "equal_share") != normalizer:
            raise _NotProven(f"LP {k + 1}: normalizer {p.get('normalizer')!r} differs from the first LP's")
        given_free = {ex.instance.agent_index[a] for a in p.get("free", [])}
        given_frozen = {ex.instance.agent_index[a]: parse_rational(v) for a, v in p.get("frozen", {}).items()}
        if given_free != free or given_frozen != frozen:
            raise _NotProven(f"LP {k + 1}: its free and frozen agents are not those the previous LPs leave")
        t = verdict.objective
        if previous is not None and t < previous:
            raise _NotProven(f"LP {k + 1}: level {rational_text(t)} is below the previous level")
        t_col = lp.column_blocks["t"].start
        if x[t_col] != t:
            raise _NotProven(f"LP {k + 1}: t = {rational_text(x[t_col])} in the primal, expected the level {rational_text(t)}")
        rows = lp.row_blocks["level"]
        utilities = _agent_values(ex, x[: lp.column_blocks["x"].size])
        newly = []
        for offset, i in enumerate(lp.level_agents):
            if i in free and y[rows.start + offset] != 0:
                if utilities[i] != scale[i] * t:
                    raise _NotProven(f"LP {k + 1}: agent {ids[i]} has a nonzero multiplier but is not at the level")
                newly.append(i)
        if not newly:
            raise _NotProven(f"LP {k + 1}: no free agent has a nonzero multiplier, so none is proven stuck")
        for i in newly:
            frozen[i] = t
            free.discard(i)
        levels.append(t)
        previous = t
    if free:
        raise _NotProven(f"agents {', '.join(ids[i] for i in sorted(free))} are never frozen")
    values = {ids[i]: frozen.get(i, 0) for i in range(len(ids))}
    return {"normalizer": normalizer, "leximin": values, "levels": levels,
            "objective": min((frozen[i] for i in part), default=0), "taking_part": [ids[i] for i in part]}


def _claim_themis(ex, cert, checked) -> dict:
    ends = [c for c in checked if c[0].kind == "themis"]
    exact = [c for c in checked if c[0].kind == "level"]
    if len(ends) != 2:
        raise _NotProven("a themis certificate holds F(rho) at the two ends of its bracket")
    (e_lo, _, _, _, v_lo), (e_hi, _, _, _, v_hi) = sorted(ends, key=lambda c: parse_rational(c[0].parameters["rho"]))
    lo, hi = parse_rational(e_lo.parameters["rho"]), parse_rational(e_hi.parameters["rho"])
    bidders = e_hi.parameters["bidders"]
    if e_lo.parameters["bidders"] != bidders:
        raise _NotProven("the two ends of the bracket name different bidders")
    rates = ideal_rates(ex)
    lags, active = themis_lags(ex, rates)
    index = [ex.instance.agent_index[a] for a in bidders]
    if not all(active[i] for i in index):
        raise _NotProven("a bidder is not active (no work or no ideal rate)")
    if v_hi.objective < 0:
        raise _NotProven(f"F({rational_text(hi)}) = {rational_text(v_hi.objective)} < 0: rho* > the upper end")
    if v_lo.objective > 0:
        raise _NotProven(f"F({rational_text(lo)}) = {rational_text(v_lo.objective)} > 0: rho* < the lower end")
    out = {"bidders": bidders, "bracket": [lo, hi], "F": [v_lo.objective, v_hi.objective]}
    if exact:
        entry, lp, x, y, verdict = exact[0]
        if entry.parameters.get("normalizer") != "ideal_rate" or sorted(entry.parameters.get("free", [])) != sorted(bidders) \
                or entry.parameters.get("frozen"):
            raise _NotProven("the exact rho LP must maximise min_i X_i / X^id_i over the bidders")
        if any(lags[i] != 0 for i in index):
            raise _NotProven("rho* = 1 / max min r_i holds only when every bidder has t_i = 0")
        if verdict.objective <= 0:
            raise _NotProven("max min r_i is 0: no allocation serves every bidder")
        rho = 1 / Fraction(verdict.objective)
        if not lo <= rho <= hi:
            raise _NotProven("the exact rho* lies outside the bracket")
        out["rho"] = _q(rho)
    return out


def _claim_pareto(ex, cert, checked) -> dict:
    if len(checked) != 1 or checked[0][0].kind != "pareto":
        raise _NotProven("a pareto certificate holds one pareto LP")
    entry, lp, x, y, verdict = checked[0]
    ids = _agent_ids(ex)
    given = {}
    if cert.allocation:
        shared = [0] * lp.column_blocks["x"].size
        index = {lp.column_name(j): j for j in range(lp.column_blocks["x"].size)}
        for name, value in cert.allocation.items():
            if name not in index:
                raise _NotProven(f"allocation: unknown column {name}")
            shared[index[name]] = value
        given = dict(zip(ids, _agent_values(ex, shared)))
        feasibility = welfare_lp(ex)  # the same polytope, for the allocation's own feasibility
        problem = feasibility.primal_failure(shared)
        if problem:
            raise _NotProven(f"the allocation is not feasible: {problem}")
        targets = entry.parameters["targets"]
        for agent in ids:
            if parse_rational(targets[agent]) != given[agent]:
                raise _NotProven(f"gain[{agent}]: the target is not U_i of the allocation")
    improvement = {}
    if verdict.objective > 0:
        s = lp.column_blocks["s"].start
        improvement = {ids[i]: x[s + i] for i in range(len(ids)) if x[s + i]}
    return {"efficient": verdict.objective == 0, "total_gain": verdict.objective, "gains": improvement,
            "utilities": given}


# --------------------------------------------------------------------------- building
def _solve(lp: ExactLP, what: str):
    solution = solve_exact(lp)
    if solution.status != "optimal":
        detail = "; ".join(solution.attempts) or solution.status
        raise _NotProven(f"{what}: no exact optimum could be certified ({detail})")
    return solution


def _allocation_names(lp: ExactLP, x: list[Number]) -> dict[str, Number]:
    block = lp.column_blocks["x"]
    return {block.namer(k): v for k, v in enumerate(x[: block.size]) if v}


def _use_result(lp: ExactLP, x_res: list[Number], value: Number) -> bool:
    full = list(x_res) + [0] * (lp.n_cols - len(x_res))
    return not lp.primal_failure(full) and lp.value(full) == value


def _welfare_like(ex, result, x_res, kind: str, params: dict) -> Certificate:
    if kind == "welfare":
        lp = welfare_lp(ex)
    else:
        opt = {k: (None if params.get(k) is None else parse_rational(params[k])) for k in ("sharing", "envy", "floor")}
        lp = fair_welfare_lp(ex, **opt, normalizer=params.get("normalizer", "equal_share"))
    sol = _solve(lp, kind)
    value = sol.verdict.objective
    notes = []
    if _use_result(lp, x_res, value):
        x = x_res
        notes.append("the result's allocation is optimal exactly, as written")
    else:
        x = sol.primal
        notes.append("the result's allocation is not exactly optimal as written; the certificate holds the exact "
                     "optimum of the repaired basis")
    entry = LPEntry(kind, params, {}, _nonzero(lp, sol.dual, rows=True), value)
    return Certificate(ex.instance.name, kind, "optimal", _allocation_names(lp, x), [entry], notes=notes)


def _vcg_certificate(ex, result, x_res) -> Certificate:
    lp = vcg_lp(ex)
    sol = _solve(lp, "vcg welfare")
    value = sol.verdict.objective
    x = x_res if _use_result(lp, x_res, value) else sol.primal
    entries = [LPEntry("vcg", {"without": None}, {}, _nonzero(lp, sol.dual, rows=True), value)]
    ids = _agent_ids(ex)
    R = ex.rounds
    winners = sorted({ex.edge_agent[k // R] for k, v in enumerate(x[: lp.column_blocks["x"].size]) if v})
    for i in winners:
        lp_i = vcg_lp(ex, without=i)
        sol_i = _solve(lp_i, f"vcg without {ids[i]}")
        entries.append(LPEntry("vcg", {"without": ids[i]}, _nonzero(lp_i, sol_i.primal, rows=False),
                               _nonzero(lp_i, sol_i.dual, rows=True), sol_i.verdict.objective, shared=False))
    return Certificate(ex.instance.name, "vcg", "optimal", _allocation_names(lp, x), entries)


def _leximin_certificate(ex, result, x_res, normalizer: str) -> Certificate:
    ids = _agent_ids(ex)
    scale = scales(ex, normalizer)
    free = [i for i in taking_part(ex) if scale[i] > 0]
    frozen: dict[int, Number] = {}
    steps = []
    last = None
    while free:
        lp = level_lp(ex, scale, frozen, free)
        sol = _solve(lp, f"level LP {len(steps) + 1}")
        t = sol.verdict.objective
        rows = lp.row_blocks["level"]
        newly = [i for k, i in enumerate(lp.level_agents) if i in free and sol.dual[rows.start + k] != 0]
        if not newly:
            raise _NotProven(f"level LP {len(steps) + 1}: no multiplier certifies a stuck agent")
        params = {"normalizer": normalizer, "frozen": {ids[i]: rational_text(v) for i, v in sorted(frozen.items())},
                  "free": [ids[i] for i in free]}
        steps.append((params, _nonzero(lp, sol.dual, rows=True), t))
        for i in newly:
            frozen[i] = t
        free = [i for i in free if i not in frozen]
        last = (lp, sol)
    notes = []
    if last is None:
        lp = level_lp(ex, scale, {}, [])
        x = [0] * lp.column_blocks["x"].size
        notes.append("no agent can get a positive utility; every value is 0")
        return Certificate(ex.instance.name, "maxmin", "optimal", {}, [
            LPEntry("level", {"normalizer": normalizer, "frozen": {}, "free": []}, {}, {}, 0)], notes=notes)
    lp, sol = last
    size = lp.column_blocks["x"].size
    x = sol.primal[:size]
    utilities = _agent_values(ex, x_res)
    if all(utilities[i] == scale[i] * frozen[i] for i in frozen) and not welfare_lp(ex).primal_failure(x_res):
        x = list(x_res)
        notes.append("the result's allocation gives every agent its exact leximin value, as written")
    else:
        notes.append("the result's allocation is not exactly leximin as written; the certificate holds the exact "
                     "allocation of the last level LP's basis")
    entries = [LPEntry("level", params, {"t": t} if t else {}, dual, t) for params, dual, t in steps]
    return Certificate(ex.instance.name, "maxmin", "optimal", _allocation_names(lp, x), entries, notes=notes)


def _themis_bidders(ex: ExactInstance, knob: Number) -> list[int]:
    rates = ideal_rates(ex)
    lags, active = themis_lags(ex, rates)
    idx = [i for i, a in enumerate(active) if a]
    order = sorted(idx, key=lambda i: (-Fraction(lags[i]), i))
    if not order:
        return []
    count = max(1, math.ceil((1 - Fraction(knob)) * len(order)))
    return order[:count]


def _themis_certificate(ex, result) -> Certificate:
    ids = _agent_ids(ex)
    knob = Fraction(repr(float(result.params.get("fairness_knob", 0.0) or 0.0)))
    bidders = _themis_bidders(ex, knob)
    if not bidders:
        raise _NotProven("no agent bids (no work or no ideal rate): there is nothing to certify")
    if result.objective is None or result.bound is None:
        raise _NotProven("the result states no bracket (objective and bound)")
    rates = ideal_rates(ex)
    lags, _ = themis_lags(ex, rates)
    names = [ids[i] for i in bidders]
    entries = []
    notes = []
    lo = _q(Fraction(repr(float(result.bound))))
    hi = _q(Fraction(repr(float(result.objective))))
    floor_lag = max(lags[i] for i in bidders)
    if not lo > floor_lag:
        lo = _q(Fraction(floor_lag) + (Fraction(hi) - floor_lag) / 2)
        notes.append("the result's lower bound does not exceed every bidder's lag; the midpoint is used")
    for rho, need in ((lo, "lower"), (hi, "upper")):
        for attempt in range(4):
            lp = themis_lp(ex, rho, bidders)
            sol = _solve(lp, f"themis F({_show(rho)})")
            value = sol.verdict.objective
            ok = value <= 0 if need == "lower" else value >= 0
            if ok or attempt == 3:
                break
            # A bracket end off by floating point: widen it by a relative 1e-12, 1e-10, 1e-8.
            step = Fraction(1, 10 ** (12 - 2 * attempt))
            rho = _q(Fraction(rho) * (1 - step if need == "lower" else 1 + step))
            notes.append(f"the {need} end was moved by a relative {float(step):g} to a value that F proves")
        entries.append(LPEntry("themis", {"rho": rational_text(rho), "bidders": names},
                               _nonzero(lp, sol.primal, rows=False), _nonzero(lp, sol.dual, rows=True), value,
                               shared=False))
    if all(lags[i] == 0 for i in bidders):
        lp = level_lp(ex, rates, {}, bidders)
        sol = _solve(lp, "themis max min r_i")
        t = sol.verdict.objective
        entries.append(LPEntry("level", {"normalizer": "ideal_rate", "frozen": {}, "free": names},
                               _nonzero(lp, sol.primal, rows=False), _nonzero(lp, sol.dual, rows=True), t,
                               shared=False))
    return Certificate(ex.instance.name, "themis", "optimal", {}, entries, notes=notes)


def _pareto_certificate(ex, result, x_res) -> Certificate:
    feasibility = welfare_lp(ex)
    problem = feasibility.primal_failure(list(x_res))
    if problem:
        raise _NotProven(f"the allocation is not feasible as written: {problem}")
    ids = _agent_ids(ex)
    targets = _agent_values(ex, x_res)
    lp = pareto_lp(ex, targets)
    sol = _solve(lp, "pareto check")
    params = {"targets": {a: rational_text(t) for a, t in zip(ids, targets)}}
    entry = LPEntry("pareto", params, _nonzero(lp, sol.primal, rows=False), _nonzero(lp, sol.dual, rows=True),
                    sol.verdict.objective, shared=False)
    return Certificate(ex.instance.name, result.method, "pareto", _allocation_names(feasibility, x_res), [entry])


def _claim_of(result: Result, claim: str) -> str:
    if claim not in CLAIMS:
        raise InputError(f"unknown claim {claim!r}; choose one of {', '.join(CLAIMS)}", path="claim")
    if claim == "pareto":
        return "pareto"
    modes = LP_METHODS.get(result.method)
    if modes is None or result.mode not in modes:
        if claim == "auto" and modes is None:
            raise InputError(
                f"{result.method} results claim no LP optimum; certify proves welfare, vcg, and fractional maxmin, "
                "themis and fair_welfare results, or the Pareto efficiency of any allocation (--claim pareto)",
                path="claim")
        raise InputError(
            f"{result.method} in {result.mode} mode is not an LP result; certify proves welfare, vcg, and fractional "
            "maxmin, themis and fair_welfare results, or the Pareto efficiency of any allocation (--claim pareto)",
            path="claim")
    return result.method


def make_certificate(instance: Instance, result: Result, *, claim: str = "auto", ex: ExactInstance | None = None,
                     allocation=None) -> Certificate:
    """Build the certificate of ``result``'s claim (uses HiGHS for bases; every number is then exact).

    ``allocation``: the allocation records to read exactly (default: ``result.allocation``).
    Raises :class:`InputError` for a result no certificate covers (an integral
    maxmin, a heuristic without ``claim="pareto"``, an infeasible result).

    >>> import laissez_opt as lo
    >>> inst = lo.Instance([lo.Pool("P")], [lo.Agent("A"), lo.Agent("B")],
    ...                    [lo.Edge("A", "P", 0.9), lo.Edge("B", "P", 0.5)], name="one")
    >>> cert = make_certificate(inst, lo.solve(inst, "vcg"))
    >>> [(e.parameters["without"], str(e.value)) for e in cert.lps]    # W* and W*_{-A}
    [(None, '9/10'), ('A', '1/2')]
    """
    kind = _claim_of(result, claim)
    if result.status == "infeasible":
        raise InputError("the result is infeasible and carries no allocation to certify", path="$.status")
    if result.instance != instance.name:
        raise InputError(f"the result is for instance {result.instance!r}, not {instance.name!r}", path="$.instance")
    ex = ex or exact_instance(instance)
    amounts = exact_amounts(ex, result.allocation if allocation is None else allocation)
    x_res = [v for row in amounts for v in row]
    try:
        if kind == "welfare":
            return _welfare_like(ex, result, x_res, "welfare", {})
        if kind == "fair_welfare":
            params = {k: (None if result.params.get(k) is None else rational_text(Fraction(repr(float(result.params[k])))))
                      for k in ("sharing", "envy", "floor")}
            params["normalizer"] = result.params.get("normalizer", "equal_share")
            return _welfare_like(ex, result, x_res, "fair_welfare", params)
        if kind == "vcg":
            return _vcg_certificate(ex, result, x_res)
        if kind == "maxmin":
            normalizer = result.params.get("normalizer") or result.details.get("normalizer") or "equal_share"
            return _leximin_certificate(ex, result, x_res, normalizer)
        if kind == "themis":
            return _themis_certificate(ex, result)
        return _pareto_certificate(ex, result, x_res)
    except _NotProven as exc:
        return Certificate(instance.name, result.method, "pareto" if kind == "pareto" else "optimal", {}, [],
                           notes=[f"not built: {exc}"])


# --------------------------------------------------------------------------- the verdict
@dataclass
class CertifyReport:
    """What :func:`certify` found.

    ``proven`` is the verdict; ``failure`` names the first thing that failed
    (a row, a column, a value); ``exact`` holds the proven values as exact
    text (``p/q``); ``deviation`` the largest distance between a number the
    result states and its exact value; ``repaired`` says that the result's
    numbers are off (within ``tolerance``) and the certificate holds the exact
    values instead.
    """

    instance: str
    method: str
    claim: str
    proven: bool
    failure: str
    exact: dict[str, Any]
    deviation: float | None
    repaired: bool
    tolerance: float
    lps: list[dict]
    notes: list[str]
    certificate: Certificate | None
    timing: dict[str, float]

    def to_dict(self) -> dict:
        return {
            "format": "laissez-opt/certify",
            "version": 1,
            "instance": self.instance,
            "method": self.method,
            "claim": self.claim,
            "proven": self.proven,
            "failure": self.failure,
            "exact": self.exact,
            "deviation": self.deviation,
            "repaired": self.repaired,
            "tolerance": self.tolerance,
            "lps": self.lps,
            "notes": self.notes,
            "timing": self.timing,
        }


def _close(claimed, exact: Number, tolerance: float) -> tuple[bool, float]:
    if claimed is None:
        return False, math.inf
    diff = abs(float(Fraction(repr(float(claimed))) - Fraction(exact)))
    return diff <= tolerance * max(1.0, abs(float(exact))), diff


def _reported_utilities_failure(ex: ExactInstance, result: Result, x_res, tol: float) -> str:
    """A failure text if a utility the result reports is not its allocation's ``U_i`` (exactly, to ``tol``)."""
    if not result.utilities:
        return ""
    index = {agent: i for i, agent in enumerate(_agent_ids(ex))}
    reached = _agent_values(ex, x_res)
    for agent, claimed in result.utilities.items():
        i = index.get(agent)
        if i is None:
            return f"utilities[{agent}]: no such agent in the instance"
        if not _close(claimed, reached[i], tol)[0]:
            return (f"utilities[{agent}]: the result reports {claimed!r} but its allocation gives "
                    f"{_show(reached[i])}")
    return ""


def _compare(kind: str, ex: ExactInstance, result: Result, x_res, values: dict, tol: float, cert: Certificate):
    """(failure, deviation, repaired) of the result's numbers against the certificate's exact values.

    After the claim itself (objective, allocation, levels, payments): the utilities the
    result reports must be its allocation's, and a maximisation's bound at least the optimum.
    """
    failure, worst, repaired = _compare_claim(kind, ex, result, x_res, values, tol, cert)
    if failure or kind == "themis":
        return failure, worst, repaired
    failure = _reported_utilities_failure(ex, result, x_res, tol)
    if not failure and kind in ("welfare", "fair_welfare", "vcg") and result.bound is not None:
        optimum = values["optimum"] if kind != "vcg" else values["welfare"]
        if float(result.bound) < float(optimum) - tol * max(1.0, abs(float(optimum))):
            failure = (f"bound: the result reports {result.bound!r}, below the exact optimum {_show(optimum)} "
                       "(a maximisation's bound cannot be)")
    return failure, worst, repaired


def _compare_claim(kind: str, ex: ExactInstance, result: Result, x_res, values: dict, tol: float, cert: Certificate):
    """(failure, deviation, repaired) of the claim's numbers against the certificate's exact values."""
    ids = _agent_ids(ex)
    worst = 0.0
    certified_x = dict(cert.allocation)
    written = _allocation_names(welfare_lp(ex), x_res) if kind != "themis" else {}
    repaired = kind != "themis" and written != certified_x

    def note(ok_diff):
        nonlocal worst
        worst = max(worst, ok_diff)

    if kind in ("welfare", "fair_welfare", "vcg"):
        optimum = values["optimum"] if kind != "vcg" else values["welfare"]
        ok, diff = _close(result.objective, optimum, tol)
        note(diff)
        if not ok:
            return (f"objective: the result reports {result.objective!r} but the exact optimum is {_show(optimum)}",
                    worst, repaired)
        if kind == "vcg":
            lp = vcg_lp(ex)
        elif kind == "fair_welfare":
            # The result's allocation must meet the fairness rows too, not only capacity and demand.
            p = values.get("parameters", {})
            opt = {k: (None if p.get(k) is None else parse_rational(p[k])) for k in ("sharing", "envy", "floor")}
            lp = fair_welfare_lp(ex, **opt, normalizer=p.get("normalizer", "equal_share"))
        else:
            lp = welfare_lp(ex)
        violation, where = lp.max_violation(list(x_res) + [0] * (lp.n_cols - len(x_res)))
        note(float(violation))
        if violation > tol * max(1, max((float(c) for c in ex.counts), default=1)):
            return f"{where}: the result's allocation breaks it by {float(violation):.3g}", worst, repaired
        reached = lp.value(list(x_res)) if kind == "vcg" else sum(
            w * u for w, u in zip(ex.weights, _agent_values(ex, x_res)))
        ok, diff = _close(float(reached), optimum, tol)
        note(diff)
        if not ok:
            return (f"allocation: the result's allocation reaches {float(reached)!r}, the exact optimum is {_show(optimum)}",
                    worst, repaired)
        if kind == "vcg":
            for agent in ids:
                claimed = (result.payments or {}).get(agent)
                ok, diff = _close(claimed, values["payments"][agent], tol)
                note(diff)
                if not ok:
                    return (f"payment[{agent}]: the result reports {claimed!r} but the exact Clarke payment is "
                            f"{_show(values['payments'][agent])}", worst, repaired)
        return "", worst, repaired
    if kind == "maxmin":
        scale = scales(ex, values["normalizer"])
        utilities = _agent_values(ex, x_res)
        violation, where = welfare_lp(ex).max_violation(list(x_res))
        note(float(violation))
        if violation > tol * max(1, max((float(c) for c in ex.counts), default=1)):
            return f"{where}: the result's allocation breaks it by {float(violation):.3g}", worst, repaired
        claimed = (result.details or {}).get("leximin", {})
        # Every agent is compared, so that a failure names the worst one and how many miss (a
        # leximin vector can be right for most agents and far off for a few late levels).
        misses = []  # (relative difference, agent, source, number, exact value) beyond the tolerance
        for i, agent in enumerate(ids):
            exact = values["leximin"][agent]
            reached = Fraction(utilities[i]) / scale[i] if scale[i] else 0
            for source, number in (("the result's allocation gives", float(reached)),
                                   ("the result reports", claimed.get(agent, _ABSENT))):
                if number is _ABSENT:
                    continue
                ok, diff = _close(number, exact, tol)
                note(diff)
                if not ok:
                    misses.append((diff / max(1.0, abs(float(exact))), agent, source, number, exact))
        if misses:
            rel, agent, source, number, exact = max(misses, key=lambda m: m[0])
            agents = len({m[1] for m in misses})
            return (f"level[{agent}]: {source} {number!r}, the exact leximin value is {_show(exact)} (relative "
                    f"difference {rel:.3g}, the largest; {agents} of {len(ids)} agents beyond the tolerance {tol:g})",
                    worst, repaired)
        ok, diff = _close(result.objective, values["objective"], tol)
        note(diff)
        if not ok:
            return (f"objective: the result reports {result.objective!r} but the exact first level is "
                    f"{_show(values['objective'])}", worst, repaired)
        return "", worst, repaired
    if kind == "themis":
        lo, hi = values["bracket"]
        if list((result.details or {}).get("bidders", [])) != values["bidders"]:
            return "bidders: the result's bidders are not the agents Themis's rule selects", worst, False
        _, diff = _close(result.objective, hi, tol)
        note(diff)
        violation, where = welfare_lp(ex).max_violation(list(x_res))
        if violation > tol * max(1, max((float(c) for c in ex.counts), default=1)):
            return f"{where}: the result's allocation breaks it by {float(violation):.3g}", worst, False
        # The allocation must reach the level it claims: rho_i = a_i + X^id_i / X_i <= objective.
        rates = ideal_rates(ex)
        lags, _ = themis_lags(ex, rates)
        rate_of = _agent_values(ex, x_res)
        for agent in values["bidders"]:
            i = ex.instance.agent_index[agent]
            if rate_of[i] <= 0 or lags[i] + Fraction(rates[i]) / rate_of[i] > Fraction(repr(float(result.objective))) * (
                    1 + Fraction(repr(float(tol)))) + Fraction(repr(float(tol))):
                return (f"finish[{agent}]: the result's allocation gives rho = "
                        f"{float(lags[i] + Fraction(rates[i]) / rate_of[i]) if rate_of[i] > 0 else math.inf:.9g}, above "
                        f"the objective {result.objective!r} it reports", worst, False)
        if float(result.objective) > float(hi) * (1 + tol) + tol:
            return f"objective: the result reports {result.objective!r}, above the proven rho* <= {_show(hi)}", worst, False
        if float(result.objective) < float(lo) * (1 - tol) - tol:
            return f"objective: the result reports {result.objective!r}, below the proven rho* >= {_show(lo)}", worst, False
        width = float((Fraction(hi) - Fraction(lo)) / Fraction(hi)) if hi else 0.0
        claimed_gap = result.gap if result.gap is not None else 0.0
        if result.status == "optimal" and width > max(claimed_gap, 1e-6) * (1 + 1e-9) and "rho" not in values:
            return (f"bracket: the certified bracket [{_show(lo)}, {_show(hi)}] is wider ({width:.3g}) than the "
                    f"result's optimality claim", worst, False)
        if "rho" in values:
            ok, diff = _close(result.objective, values["rho"], max(tol, 1e-6))
            note(diff)
            if not ok:
                return (f"objective: the result reports {result.objective!r} but rho* is exactly {_show(values['rho'])}",
                        worst, False)
        return "", worst, False
    # pareto
    if not values["efficient"]:
        gains = ", ".join(f"{a} +{float(g):.6g}" for a, g in values["gains"].items())
        return (f"pareto: an allocation gives every agent at least as much and {gains} "
                f"(total gain {_show(values['total_gain'])})", 0.0, False)
    return "", 0.0, False


def certify(instance: Instance, result: Result, *, claim: str = "auto", certificate: Certificate | dict | None = None,
            tolerance: float = 1e-9, allocation=None, certificate_source: str | None = None) -> CertifyReport:
    """Prove ``result``'s claim in exact arithmetic (module docstring); a :class:`CertifyReport`.

    ``claim``: ``"auto"`` (the method's optimality claim), ``"optimal"`` or
    ``"pareto"`` (Pareto efficiency of the allocation, any method).
    ``certificate``: a certificate to check instead of building one (then no
    solver runs).  ``tolerance``: relative distance at which the result's
    floating-point numbers still count as the exact ones.  ``allocation``:
    allocation records with exact amounts (read from a result file's text),
    default ``result.allocation``.
    """
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise InputError(f"tolerance must be a number in [0, 1), got {tolerance!r}", path="tolerance")
    start = time.perf_counter()
    kind = _claim_of(result, claim)
    if result.status == "infeasible":
        raise InputError("the result is infeasible and carries no allocation to certify", path="$.status")
    if result.instance != instance.name:
        raise InputError(f"the result is for instance {result.instance!r}, not {instance.name!r}", path="$.instance")
    ex = exact_instance(instance)
    records = result.allocation if allocation is None else allocation
    x_res = _vector_of(exact_amounts(ex, records))
    built = certificate is None
    if built:
        cert = make_certificate(instance, result, claim=claim, ex=ex, allocation=records)
    else:
        cert = certificate if isinstance(certificate, Certificate) else Certificate.from_dict(certificate, certificate_source)
        expected = "pareto" if kind == "pareto" else "optimal"
        if cert.method != result.method or cert.claim != expected:
            raise InputError(f"the certificate proves {cert.claim} for {cert.method}, not {expected} for {result.method}",
                             source=certificate_source, path="$.claim")
    t_built = time.perf_counter()
    lps: list[dict] = []
    if not cert.lps:
        failure = cert.notes[0] if cert.notes else "no certificate could be built"
        check = CertificateCheck(False, failure, {}, [])
    else:
        check = check_certificate(instance, cert, ex=ex, source=certificate_source)
        lps = check.lps
    t_checked = time.perf_counter()
    exact: dict[str, Any] = {}
    deviation, repaired, failure = None, False, check.failure
    if check.ok:
        exact = _text_values(check.values)
        failure, deviation, repaired = _compare(kind, ex, result, x_res, check.values, tolerance, cert)
    end = time.perf_counter()
    return CertifyReport(
        instance=instance.name,
        method=result.method,
        claim="pareto" if kind == "pareto" else "optimal",
        proven=check.ok and not failure,
        failure=failure,
        exact=exact,
        deviation=deviation,
        repaired=repaired,
        tolerance=tolerance,
        lps=lps,
        notes=list(cert.notes),
        certificate=cert if cert.lps else None,
        timing={"build_s": t_built - start if built else 0.0, "check_s": t_checked - t_built,
                "compare_s": end - t_checked, "total_s": end - start},
    )
