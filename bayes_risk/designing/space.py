"""The space a design searches (:class:`DesignSpace`) and the remedies it may apply, by name
(:data:`REMEDIES`, :func:`register_remedy`), with the options of ``bayes-risk design`` that
set the space's fields. See :doc:`/user_guide/design`.

Imports only the standard library and light helpers at module level: ``bayes-risk design``
declares its space options from the fields (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bayes_risk._constraints import (
    InstanceOf,
    Interval,
    Options,
    SequenceOf,
    check_keywords,
    check_params,
    check_value,
)
from bayes_risk._search_spec import OBJECTIVES
from bayes_risk._specs import cli_option, split_lists
from bayes_risk.exceptions import ValidationError

__all__ = ["DesignSpace", "Remedy", "REMEDIES", "KNOBS", "SPACE", "register_remedy",
           "candidate_key", "fit_key", "columns_to_cover"]

#: the argument group of ``bayes-risk design --help`` that lists the space's options
SPACE = "the space (each default stated in the report)"

#: the main knobs of each synthesizer and the values a design tries by default: CART's and the
#: forest's minimum leaf and smoothing (synthpop's ``minbucket`` and ``smoothing``), DPMPM's
#: number of classes and the Gamma prior of its concentration, PMM's cell size
KNOBS: dict[str, dict[str, tuple[Any, ...]]] = {
    "cart": {"min_leaf": (5, 20, 50), "smoothing": (False, True)},
    "rf": {"min_samples_leaf": (2, 10), "smoothing": (False, True)},
    "dpmpm": {"n_components": (10, 30), "alpha_prior": ((0.25, 0.25), (1.0, 1.0))},
    "pmm": {"threshold": (3, 5, 10)},
}


@dataclass(frozen=True)
class Remedy:
    """A post-processing of a release the design may apply after synthesis.

    Parameters
    ----------
    name : str
        The remedy's name on the ``remedy`` axis.
    apply : callable
        ``apply(original, release, candidate) -> SyntheticData``; ``candidate`` is the dict
        of the candidate's settings (``columns``, ``known``, …, and ``random_seed``, the
        seed of a remedy that draws).
    applies : callable
        ``applies(original, schema, candidate) -> str | None``: why the remedy cannot apply to
        the candidate (it is left out of the space with that reason), else ``None``.
    description : str
        What it does, for the report.
    """

    name: str
    apply: Callable[..., Any]
    applies: Callable[..., str | None]
    description: str


def _numeric_synthesized(schema: Any, cand: Mapping[str, Any]) -> list[str]:
    """The continuous synthesized columns: those smoothing and the sdcMicro remedies change (a
    count column smoothed would hold values that are not counts)."""
    return [c for c in cand["columns"] if c in schema.numeric and schema[c].type == "continuous"]


def _none(original: Any, release: Any, cand: Mapping[str, Any]) -> Any:
    return release


def _smooth(original: Any, release: Any, cand: Mapping[str, Any]) -> Any:
    from bayes_risk.disclosure.sdc import sdc

    return sdc(original, release, smooth=cand["numeric_synthesized"])


def _coded_columns(schema: Any, cand: Mapping[str, Any]) -> list[str]:
    """The numeric synthesized columns, counts included: those ``bottom_top`` codes."""
    return [c for c in cand["columns"] if c in schema.numeric]


def _coding_bounds(x: Any, count: bool) -> tuple[float, float]:
    """A column's bottom and top codes: its 1st and 99th percentiles, or its 5th and 95th
    where those are its smallest or largest value (a value held by more than 1 % of records,
    as an original's own top-code: coding at it would change nothing); a count's at whole
    numbers, inside the percentiles."""
    import math

    lo, hi = float(x.quantile(0.01)), float(x.quantile(0.99))
    if lo == float(x.min()):
        lo = float(x.quantile(0.05))
    if hi == float(x.max()):
        hi = float(x.quantile(0.95))
    return (float(math.ceil(lo)), float(math.floor(hi))) if count else (lo, hi)


def _bottom_top(original: Any, release: Any, cand: Mapping[str, Any]) -> Any:
    from bayes_risk.disclosure.sdc import sdc

    schema = release.schema
    bounds, exclude = {}, {}
    for c in _coded_columns(schema, cand):
        codes = list(schema[c].missing_codes)
        x = original[c].astype(float)
        bounds[c] = _coding_bounds(x[~x.isin(codes)].dropna(), schema[c].type != "continuous")
        if codes:
            exclude[c] = codes
    return sdc(original, release, bottom_top_coding=bounds, recode_exclude=exclude or None)


def _needs_numeric(original: Any, schema: Any, cand: Mapping[str, Any]) -> str | None:
    if not _numeric_synthesized(schema, cand):
        return "no continuous synthesized column"
    return None


def _needs_coded(original: Any, schema: Any, cand: Mapping[str, Any]) -> str | None:
    return None if _coded_columns(schema, cand) else "no numeric synthesized column"


def _categorical_synthesized(schema: Any, cand: Mapping[str, Any]) -> list[str]:
    return [c for c in cand["columns"] if c in schema.names and schema[c].is_categorical]


def _sdcmicro(original: Any, release: Any, cand: Mapping[str, Any], **how: Any) -> Any:
    from bayes_risk.disclosure.sdcmicro import sdcmicro

    return sdcmicro(original, release, random_seed=cand.get("random_seed"), **how)


def _pram(original: Any, release: Any, cand: Mapping[str, Any]) -> Any:
    return _sdcmicro(original, release, cand,
                     pram=_categorical_synthesized(release.schema, cand))


def _needs_categorical(original: Any, schema: Any, cand: Mapping[str, Any]) -> str | None:
    return None if _categorical_synthesized(schema, cand) else "no categorical synthesized column"


def _suppress(original: Any, release: Any, cand: Mapping[str, Any]) -> Any:
    return _sdcmicro(original, release, cand, local_suppression=list(cand["known"]))


def _needs_synthesized_keys(original: Any, schema: Any, cand: Mapping[str, Any]) -> str | None:
    """Local suppression changes the known columns: each must be synthesized (the measures rely
    on an unsynthesized column being the original's) and no continuous one."""
    kept = [c for c in cand["known"] if c not in cand["columns"]]
    if kept:
        return f"known column(s) {', '.join(kept)} released unsynthesized"
    cont = [c for c in cand["known"] if schema[c].type == "continuous"]
    return f"continuous known column(s) {', '.join(cont)}" if cont else None


#: the remedies of every space unless it names its own
DEFAULT_REMEDIES = ("none", "smooth")

#: the remedies by name: synthpop's ``sdc()`` post-processing and sdcMicro's remedies at their
#: defaults (``bayes-risk remedy``); another is added with :func:`register_remedy` and named on
#: the ``remedy`` axis
REMEDIES: dict[str, Remedy] = {
    "none": Remedy("none", _none, lambda *a: None, "the release as synthesized"),
    "smooth": Remedy("smooth", _smooth, _needs_numeric,
                     "synthpop's sdc() smoothing of every continuous synthesized column"),
    "bottom_top": Remedy("bottom_top", _bottom_top, _needs_coded,
                         "synthpop's sdc() bottom and top coding of every numeric synthesized "
                         "column, counts included, at the original's 1st and 99th "
                         "percentiles (the 5th and 95th where those are its smallest or "
                         "largest value, held by more than 1 % of records; a count's at whole "
                         "numbers)"),
    "pram": Remedy("pram", _pram, _needs_categorical,
                   "sdcMicro's invariant PRAM of every categorical synthesized column (pd 0.8, "
                   "alpha 0.5)"),
    "local_suppression": Remedy("local_suppression", _suppress, _needs_synthesized_keys,
                                "sdcMicro's local suppression to 2-anonymity on the known "
                                "columns"),
    "microaggregation": Remedy(
        "microaggregation",
        lambda o, r, c: _sdcmicro(o, r, c, microaggregation=c["numeric_synthesized"]),
        _needs_numeric, "sdcMicro's MDAV microaggregation of the continuous synthesized "
        "columns jointly, groups of 3"),
    "add_noise": Remedy(
        "add_noise", lambda o, r, c: _sdcmicro(o, r, c, add_noise=c["numeric_synthesized"]),
        _needs_numeric, "sdcMicro's additive noise on every continuous synthesized column "
        "(standard deviation 150 % of the column's)"),
}


def register_remedy(remedy: Remedy) -> Remedy:
    """Add ``remedy`` to :data:`REMEDIES` under its name (the ``remedy`` axis names it).

    Raises
    ------
    ValidationError
        When ``remedy`` is not a :class:`Remedy` or its name is taken (``INVALID_ARGUMENT``).
    """
    check_value(remedy, InstanceOf(Remedy, "a bayes_risk.designing.Remedy"), "remedy")
    if remedy.name in REMEDIES:
        raise ValidationError(f"remedy {remedy.name!r} is already registered.",
                              code="INVALID_ARGUMENT")
    REMEDIES[remedy.name] = remedy
    return remedy


def remedies_named(line: Mapping[str, Any]) -> list[str]:
    """The design's remedies that the audit's remedies name for ``line``, a verdict line past
    its threshold: its measure's ``Measure.remedies`` that are registered."""
    from bayes_risk.measures import measures

    named = {m.name: m.remedies for m in measures()}.get(line.get("step"), ())
    return [r for r in named if r in REMEDIES]


def columns_to_cover(line: Mapping[str, Any], known: Sequence[str],
                     synthesized: Sequence[str]) -> list[str]:
    """The released columns whose synthesis the audit's remedies name for ``line``, a verdict
    line past its threshold (``step``, ``measure``, ``threshold_name``, ...): its measure's
    ``Measure.covers`` (none for a measure without it, whose remedies are knobs: smoothing,
    larger leaves, fewer datasets, nor for a step no registered measure runs)."""
    from bayes_risk.measures import measures

    covers = {m.name: m.covers for m in measures()}.get(line.get("step"))
    return [] if covers is None else list(covers(line, known, synthesized))


def grown_columns(base: Sequence[str], covers: Sequence[Sequence[str]],
                  candidates: Sequence[str], grow: int = 1) -> list[tuple[str, ...]]:
    """Column sets to synthesize: ``base`` with each minimal set of ``candidates`` that meets
    every set of ``covers`` (a hitting set: one column against each line), then those sets
    grown by up to ``grow`` more of ``candidates``; ``base`` alone when nothing is to cover."""
    need = [set(c) for c in covers if c]
    pool = [c for c in candidates if c not in base]
    minimal: list[set[str]] = []
    if need:
        for k in range(1, len(pool) + 1):
            for combo in itertools.combinations(pool, k):
                s = set(combo)
                if all(s & n for n in need) and not any(m <= s for m in minimal):
                    minimal.append(s)
            if minimal and k >= max(len(x) for x in minimal) + grow:
                break
    sets = [set()] if not need else list(minimal)
    out: list[set[str]] = []
    for s in sets:
        for extra in range(grow + 1):
            for combo in itertools.combinations([c for c in pool if c not in s], extra):
                t = s | set(combo)
                if t not in out:
                    out.append(t)
    order = {c: i for i, c in enumerate([*base, *candidates])}
    return [tuple(sorted({*base, *t}, key=order.get)) for t in sorted(out, key=len)]


def _canonical(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(x.items())}
    return x


def candidate_key(cand: Mapping[str, Any]) -> str:
    """A candidate's identity: its settings as canonical JSON (columns, method, knobs, m,
    remedy)."""
    return json.dumps(_canonical({k: cand[k] for k in ("columns", "method", "knobs", "m",
                                                       "remedy")}), sort_keys=True)


def fit_key(cand: Mapping[str, Any]) -> str:
    """What the fitted model depends on: the candidates sharing it share one fit."""
    return json.dumps(_canonical({k: cand[k] for k in ("columns", "method", "knobs")}),
                      sort_keys=True)


def stable_seed(seed: int, *parts: str) -> list[int]:
    """A seed of ``seed`` and ``parts`` (e.g. a candidate's key), stable across runs."""
    h = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return [int(seed), int.from_bytes(h[:4], "little")]


def _value(text: Any) -> Any:
    """A value of ``fix``/``exclude`` as given on the command line (``5``, ``true``,
    ``Tenure,Income``) or in Python."""
    if not isinstance(text, str):
        return text
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    try:
        return json.loads(t)
    except ValueError:
        return t


def _values(text: str) -> list[Any]:
    """An axis's comma-separated values as given on the command line (``5,20,50``)."""
    return [_value(v) for v in text.split(",") if v.strip()]


def _pairs(items: Sequence[str], option: str) -> dict[str, str]:
    """The ``AXIS=VALUE`` items of a repeated ``option``, by axis (a later one wins)."""
    out: dict[str, str] = {}
    for it in items:
        key, sep, value = it.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValidationError(f"{option} {it!r}: expected AXIS=VALUE.",
                                  code="BAD_OPTION_VALUE")
        out[key.strip()] = value.strip()
    return out


def _knobs(items: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """``--knob METHOD.SETTING=V,V`` (repeated) as ``{method: {setting: values}}``."""
    knobs: dict[str, dict[str, list[Any]]] = {}
    for axis, values in _pairs(items, "--knob").items():
        method, dot, name = axis.partition(".")
        if not dot or not name:
            raise ValidationError(f"--knob {axis!r}: expected METHOD.SETTING=V,V "
                                  "(cart.min_leaf=5,20).", code="BAD_OPTION_VALUE")
        knobs.setdefault(method, {})[name] = _values(values)
    return knobs


def _fixed(items: Sequence[str]) -> dict[str, Any]:
    """``--fix AXIS=VALUE`` (repeated): the ``columns`` axis's value is a comma-separated set."""
    return {k: (_values(v) if k == "columns" else v) for k, v in _pairs(items, "--fix").items()}


def _excluded(items: Sequence[str]) -> dict[str, list[Any]]:
    """``--exclude AXIS=V,V`` (repeated)."""
    return {k: _values(v) for k, v in _pairs(items, "--exclude").items()}



def _registered(method: str, argument: str) -> None:
    """Nothing when ``method`` is a registered synthesizer; else ``UNKNOWN_SYNTHESIZER`` naming
    ``argument`` and the registered ones."""
    from bayes_risk.registry import list_synthesizers

    check_value(method, Options(tuple(list_synthesizers()), listed=True),
                f"{argument}: the synthesizer", code="UNKNOWN_SYNTHESIZER")


def _init_parameters(method: str) -> set[str] | None:
    """The settings the synthesizer ``method`` is made with (its ``setting_names()``, e.g. a
    tree model's tree options, and its ``__init__``'s keywords; ``None``: any, an ``__init__``
    taking ``**kwargs`` that names none of them, or one that cannot be read); an unknown
    method is refused (``UNKNOWN_SYNTHESIZER``)."""
    import inspect

    from bayes_risk.registry import get_synthesizer

    _registered(method, "knobs")
    cls = get_synthesizer(method)
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return None
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if hasattr(cls, "setting_names"):
        return names | set(cls.setting_names())
    return None if any(p.kind is p.VAR_KEYWORD for p in params) else names


@dataclass(frozen=True)
class DesignSpace:
    """The releases a design searches: which columns to synthesize, the synthesizer and its
    knobs, ``m`` and the remedies, each axis fixed or excluded at will.

    Parameters
    ----------
    columns : sequence of sequence of str, optional
        The column sets to synthesize. Default: grown from the start audit (the minimal sets
        of released columns that meet every line past its threshold whose remedy is to
        synthesize a column, each grown by one more), else required.
    methods : sequence of str, optional
        Synthesizers by their registered names (``cart``, ``rf``, ``dpmpm``, ``pmm``).
        Default: the start release's method, else ``cart``.
    knobs : mapping, optional
        ``{method: {setting: values}}`` replacing :data:`KNOBS`' values for that method.
    m : sequence of int, optional
        Numbers of synthetic datasets. Default: the start release's ``m`` and fewer (``m``
        and ``max(1, m // 2)``), else ``(5, 2)``.
    remedies : sequence of str, optional
        Names of :data:`REMEDIES` (``"none"``: the release as synthesized). Default
        ``("none", "smooth")`` and the remedies the start audit's lines past their thresholds
        name (``Measure.remedies``: ``bottom_top`` for the largest value's relative
        difference).
    fix : mapping, optional
        ``{axis: value}``: that axis takes this value only. Axes: ``columns`` (a list of
        columns), ``method``, ``m``, ``remedy`` and ``METHOD.SETTING`` (``cart.min_leaf``).
    exclude : mapping, optional
        ``{axis: [values]}``: values an axis never takes.

    Raises
    ------
    ValidationError
        An unknown axis, method, setting or remedy, or a space left empty
        (``INVALID_ARGUMENT``).
    """

    columns: Sequence[Sequence[str]] | None = field(default=None, metadata=cli_option(
        "--columns", "column sets to synthesize, each comma-separated", nargs="+",
        metavar="COL,COL", parse=split_lists, group=SPACE))
    methods: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--methods", "synthesizers (cart, rf, dpmpm, pmm, ...)", nargs="+", metavar="METHOD",
        group=SPACE))
    knobs: Mapping[str, Mapping[str, Sequence[Any]]] | None = field(default=None, metadata=(
        cli_option("--knob", "the values of a synthesizer's knob (repeat), e.g. "
                   "cart.min_leaf=5,20,50", action="append", metavar="METHOD.SETTING=V,V",
                   parse=_knobs, group=SPACE)))
    m: Sequence[int] | None = field(default=None, metadata=cli_option(
        "-m", "numbers of synthetic datasets", nargs="+", type=int, metavar="M", group=SPACE))
    remedies: Sequence[str] | None = field(default=None, metadata=cli_option(
        "--remedies", "remedies applied after synthesis (none, smooth, bottom_top, or a "
        "registered one; default none smooth, and those the start audit's lines past their "
        "thresholds name: bottom_top for the largest value)", nargs="+", metavar="NAME",
        group=SPACE))
    fix: Mapping[str, Any] = field(default_factory=dict, metadata=cli_option(
        "--fix", "hold an axis at one value (repeat), e.g. m=5 or cart.smoothing=true",
        action="append", metavar="AXIS=VALUE", parse=_fixed, group=SPACE))
    exclude: Mapping[str, Sequence[Any]] = field(default_factory=dict, metadata=cli_option(
        "--exclude", "values an axis never takes (repeat), e.g. remedy=bottom_top",
        action="append", metavar="AXIS=V,V", parse=_excluded, group=SPACE))

    def __post_init__(self) -> None:
        for name in self.remedies or ():
            check_value(name, Options(tuple(REMEDIES)), "remedies")
        for method in (self.methods or ()):
            if method not in KNOBS and method not in (self.knobs or {}):
                _registered(method, "methods")
        for method, ks in (self.knobs or {}).items():
            takes = _init_parameters(method)
            for k, vals in ks.items():
                check_value(vals, SequenceOf(InstanceOf(object, "a value"), "values"),
                            f"knobs: {method}.{k}")
                if takes is not None and k not in takes:
                    # each candidate is made as ``cls(**knobs)``: an unknown setting would
                    # stop the search at its first fit with Python's TypeError
                    shown = sorted(takes - {"progressbar", "random_seed", "n_jobs"})
                    raise ValidationError(
                        f"knobs: {method}.{k}: {method!r} has no setting {k!r}; its settings: "
                        f"{', '.join(shown)}.", code="INVALID_ARGUMENT")
        for m in (self.m or ()):
            check_value(m, Interval(int, 1), "m")
        check_params(self, dict.fromkeys(("fix", "exclude"),
                                         InstanceOf(Mapping, "a mapping of axis to value(s)")))
        object.__setattr__(self, "fix", {k: _value(v) for k, v in self.fix.items()})
        object.__setattr__(self, "exclude", {
            k: [_value(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
            for k, v in self.exclude.items()})

    def method_knobs(self, method: str) -> dict[str, tuple[Any, ...]]:
        """The knobs of ``method`` and their values (:data:`KNOBS`, replaced by ``knobs``)."""
        out = dict(KNOBS.get(method, {}))
        out.update({k: tuple(v) for k, v in (self.knobs or {}).get(method, {}).items()})
        return out

    def resolved(self, *, columns: Sequence[Sequence[str]], methods: Sequence[str],
                 m: Sequence[int], remedies: Sequence[str] = ()) -> DesignSpace:
        """This space with its defaults filled in (``remedies``: added to the default ones)."""
        return DesignSpace(columns=[list(c) for c in (self.columns or columns)],
                           methods=list(self.methods or methods), knobs=self.knobs,
                           m=list(self.m or m),
                           remedies=list(self.remedies or dict.fromkeys(
                               [*DEFAULT_REMEDIES, *remedies])),
                           fix=dict(self.fix), exclude=dict(self.exclude))

    def axes(self) -> dict[str, list[Any]]:
        """Every axis and its values, before ``fix`` and ``exclude``."""
        out: dict[str, list[Any]] = {"columns": [list(c) for c in self.columns or []],
                                     "method": list(self.methods or []),
                                     "m": list(self.m or []),
                                     "remedy": list(self.remedies or DEFAULT_REMEDIES)}
        for method in self.methods or []:
            for k, vals in self.method_knobs(method).items():
                out[f"{method}.{k}"] = [list(v) if isinstance(v, tuple) else v for v in vals]
        return out

    def _check_axes(self) -> None:
        axes = self.axes()
        for what in ("fix", "exclude"):
            for k in getattr(self, what):
                if k not in axes:
                    raise ValidationError(f"{what}: unknown axis {k!r}; the axes of this space "
                                          f"are {', '.join(axes)}.", code="INVALID_ARGUMENT")

    def candidates(self, original: Any, schema: Any, known: Sequence[str]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Every candidate of the space, and those left out with the reason (a remedy that
        does not apply, a setting the synthesizer refuses).

        Returns
        -------
        (list of dict, list of dict)
            Each candidate: ``columns``, ``method``, ``knobs``, ``m``, ``remedy``,
            ``numeric_synthesized``, ``known`` and ``key``.
        """
        self._check_axes()
        axes = self.axes()

        def values(axis: str) -> list[Any]:
            vals = axes[axis]
            if axis in self.fix:
                fixed = self.fix[axis]
                return [fixed]
            gone = self.exclude.get(axis, [])
            return [v for v in vals if v not in gone]

        for col_set in values("columns"):
            bad = [c for c in col_set if c not in schema.names]
            if bad:
                raise ValidationError(f"columns: {bad} not in the original (columns: "
                                      f"{', '.join(schema.names)}).", code="MISSING_COLUMN")
        out, dropped, seen = [], [], set()
        for method in values("method"):
            knob_names = list(self.method_knobs(method))
            grids = [values(f"{method}.{k}") for k in knob_names]
            for cols, m, remedy, *kv in itertools.product(values("columns"), values("m"),
                                                          values("remedy"), *grids):
                knobs = dict(zip(knob_names, kv, strict=True))
                cand = {"columns": list(cols), "method": method, "knobs": knobs, "m": int(m),
                        "remedy": remedy, "known": list(known)}
                cand["numeric_synthesized"] = _numeric_synthesized(schema, cand)
                cand["key"] = candidate_key(cand)
                if cand["key"] in seen:
                    continue
                seen.add(cand["key"])
                why = _refused(method, knobs, schema, cand) or REMEDIES[remedy].applies(
                    original, schema, cand)
                if why:
                    dropped.append({**cand, "reason": why})
                else:
                    out.append(cand)
        if not out:
            reasons = sorted({d["reason"] for d in dropped}) or ["an axis has no value left"]
            raise ValidationError("the design space is empty after fix and exclude ("
                                  + "; ".join(reasons) + ").", code="INVALID_ARGUMENT")
        return out, dropped

    def to_dict(self) -> dict[str, Any]:
        """The space as JSON: its axes with their values, ``fix`` and ``exclude``."""
        return {"axes": self.axes(), "fix": dict(self.fix), "exclude": dict(self.exclude)}

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> DesignSpace:
        """A space from the JSON of a spec file: ``columns``, ``methods``, ``knobs``, ``m``,
        ``remedies``, ``fix``, ``exclude`` (each optional)."""
        allowed = {"columns", "methods", "knobs", "m", "remedies", "fix", "exclude"}
        check_value(spec, InstanceOf(Mapping, "a JSON object"), "the design space spec")
        check_keywords(spec, allowed, "the design space spec")
        return cls(**spec)


def _refused(method: str, knobs: Mapping[str, Any], schema: Any,
             cand: Mapping[str, Any]) -> str | None:
    """Why ``method`` cannot make this candidate, else ``None``."""
    from bayes_risk.contract import capabilities
    from bayes_risk.registry import get_synthesizer

    cls = get_synthesizer(method)
    if capabilities(cls).categorical_only:
        num = [c for c in schema.names if c in schema.numeric]
        if num:
            return f"{method} models categorical columns only (numeric: {', '.join(num)})"
    if method == "rf" and knobs.get("smoothing") and (knobs.get("min_samples_leaf") or 1) < 2:
        return "rf smoothing needs min_samples_leaf of 2 or more"
    if knobs.get("smoothing") and not cand["numeric_synthesized"]:
        return "smoothing: no numeric synthesized column"
    return None


def objective_value(record: Mapping[str, Any], objective: str) -> float:
    """The candidate's figure of the utility line ``objective`` (its worst line of that name);
    NaN when it has none."""
    vals = [x["value"] for x in record["lines"] if x["threshold_name"] == objective]
    if not vals:
        return float("nan")
    return min(vals) if OBJECTIVES[objective] == "max" else max(vals)
