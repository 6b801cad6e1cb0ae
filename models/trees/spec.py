"""synthpop-style synthesis specifications (method per column, visit sequence, predictor
matrix). See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bayes_risk._constraints import COLUMN_NAMES, Options, SequenceOf, check_value
from bayes_risk.data.schema import Schema, check_names
from bayes_risk.data.validate import require_distinct
from bayes_risk.exceptions import CALLER, BayesRiskWarning, ValidationError, arg_name

#: the spec's settings as its messages name them (on the command line, the options that set
#: them: --method-per-column, --predictor-matrix)
_METHOD, _PREDICTORS = "SynthesisSpec.method", "SynthesisSpec.predictor_matrix"

__all__ = ["DONOR_METHODS", "METHODS", "ResolvedSpec", "SynthesisSpec"]

#: the per-column methods: synthpop's names ("" keeps a column's original values)
METHODS = ("cart", "rf", "ctree", "sample", "norm", "normrank", "pmm", "logreg", "polyreg",
           "polr", "")
#: the methods whose numeric draws are observed values of donor records (``norm`` alone draws
#: new values; ``normrank`` maps its draws back to observed values through their ranks)
DONOR_METHODS = ("cart", "rf", "ctree", "sample", "normrank", "pmm")


@dataclass(frozen=True)
class ResolvedSpec:
    """A specification applied to a table: every column's method, the visit sequence, the
    synthesized columns (method other than ``""``) and their predictors."""

    methods: dict[str, str]
    visit_sequence: list[str]
    synthesized: list[str]
    predictors: dict[str, list[str]]


@dataclass(frozen=True)
class SynthesisSpec:
    """A synthpop-style specification of a sequential synthesis (Nowok, Raab & Dibben 2016),
    resolved with the defaults of synthpop 1.9-2's ``syn()`` (:meth:`resolve`; user guide,
    Synthesizers).

    Parameters
    ----------
    method : str or mapping of str to str, default "cart"
        One method for every visited column, or a method per column: ``"cart"``, ``"rf"``
        (synthpop's small forest), ``"ctree"`` (party's conditional inference tree),
        ``"sample"``,
        ``"norm"``, ``"normrank"``, ``"pmm"`` (numeric columns), ``"logreg"``, ``"polyreg"``,
        ``"polr"`` (categorical columns) or ``""`` (keep the original values).
    visit_sequence : sequence of str, optional
        The columns to visit, in order (default: the ``synthesized`` columns of ``fit``, else
        the columns a ``method`` mapping names with a method other than ``""``).
    predictor_matrix : DataFrame or mapping of str to sequence of str, optional
        Which columns predict which: a square 0/1 table (row: the column predicted), or
        ``{column: [predictors]}`` for the columns whose predictors differ from the default.

    Raises
    ------
    ValidationError
        For an unknown method (naming the column), a column visited twice, or a predictor
        matrix that is not square 0/1 with matching row and column names.

    Examples
    --------
    Hornby & Hu's (2021) scenario (4), ``syn(CEdata, visit.sequence = c("Tenure",
    "Expenditure", "Income"))``:

    >>> from bayes_risk.data import make_ce_like, infer_schema
    >>> df = make_ce_like(200, random_seed=1)
    >>> schema = infer_schema(df, categorical=["Urban", "Marital", "Tenure"])
    >>> spec = SynthesisSpec(visit_sequence=["Tenure", "Expenditure", "Income"])
    >>> r = spec.resolve(schema)
    >>> r.methods["Tenure"], r.methods["Income"], r.methods["Age"]
    ('sample', 'cart', '')
    >>> r.predictors["Income"]
    ['Tenure', 'Expenditure']
    """

    method: str | Mapping[str, str] = "cart"
    visit_sequence: Sequence[str] | None = None
    predictor_matrix: pd.DataFrame | Mapping[str, Sequence[str]] | None = None

    def __post_init__(self) -> None:
        m = self.method
        if isinstance(m, Mapping):
            m = {str(c): v for c, v in m.items()}
            for c, v in m.items():
                _check_method(v, c)
            object.__setattr__(self, "method", m)
        else:
            _check_method(m, None)
            if m == "":
                raise ValidationError(f'{arg_name(_METHOD)}: "" for every column synthesizes '
                                      "nothing; give a method such as 'cart', or a method per "
                                      "column.")
        if self.visit_sequence is not None:
            vs = [self.visit_sequence] if isinstance(self.visit_sequence, str) \
                else list(self.visit_sequence)
            check_value(vs, COLUMN_NAMES, "visit_sequence")
            require_distinct(vs, "visit_sequence")
            object.__setattr__(self, "visit_sequence", tuple(vs))
        if self.predictor_matrix is not None:
            object.__setattr__(self, "predictor_matrix", _predictor_rows(self.predictor_matrix))

    def __jsonable__(self) -> dict[str, Any]:
        """JSON form (settings of a saved model or a release's manifest)."""
        pm, vs = self.predictor_matrix, self.visit_sequence
        return {"method": dict(self.method) if isinstance(self.method, Mapping) else self.method,
                "visit_sequence": None if vs is None else list(vs),
                "predictor_matrix": None if pm is None else {k: list(v) for k, v in pm.items()}}

    @classmethod
    def coerce(cls, spec: Any) -> SynthesisSpec | None:
        """``spec`` as a :class:`SynthesisSpec` (``None``, a spec, or its JSON form)."""
        if spec is None or isinstance(spec, SynthesisSpec):
            return spec
        if isinstance(spec, Mapping) and set(spec) <= {"method", "visit_sequence",
                                                       "predictor_matrix"}:
            return cls(**spec)
        raise ValidationError("spec must be a SynthesisSpec (or its dict form with keys method, "
                              f"visit_sequence, predictor_matrix). Got {spec!r}.")

    def resolve(self, schema: Schema, synthesized: Sequence[str] | None = None) -> ResolvedSpec:
        """Apply the specification to a table with columns ``schema`` (synthpop's defaults).

        Parameters
        ----------
        schema : Schema
            The table's columns and types.
        synthesized : sequence of str, optional
            The visit sequence when the specification gives none (``fit``'s ``synthesized``).

        Returns
        -------
        ResolvedSpec

        Raises
        ------
        ValidationError
            When ``synthesized`` and ``visit_sequence`` disagree, a method does not suit its
            column's type, or a method is given to a column that is not visited.
        SchemaError
            For a name that is not a column (``UNKNOWN_COLUMN``).

        Warns
        -----
        BayesRiskWarning
            ``PREDICTOR_DROPPED``: a predictor synthesized after its column is dropped.
        """
        names = list(schema.names)
        visit = self._visit(synthesized, names)
        methods = self._methods(visit, names)
        synth = [c for c in visit if methods[c] != ""]
        if not synth:
            raise ValidationError(f'every visited column {visit} has method ""; nothing would be '
                                  "synthesized.")
        rank = {c: k for k, c in enumerate(visit)}
        given = self.predictor_matrix
        if given is not None:
            for row, preds in given.items():
                check_names([row, *preds], names, _PREDICTORS)
        for c in synth:  # synthpop checks the types before a method without predictors changes
            _check_type(methods[c], c, schema)
        predictors: dict[str, list[str]] = {}
        for c in synth:
            if methods[c] == "sample":
                predictors[c] = []
                continue
            if given is not None and c in given:
                preds = set(given[c]) - {c}
                late = [p for p in names if p in preds and p in synth and rank[p] > rank[c]]
                if late:  # synthpop's check.predictor.matrix.syn drops them with a message
                    warnings.warn(BayesRiskWarning(
                        f"{arg_name(_PREDICTORS)}: {late} of column {c!r} are synthesized "
                        "after it, so they cannot predict it; dropped from its predictors, as "
                        "synthpop does (PREDICTOR_DROPPED). To keep one, visit it before "
                        f"{c!r}.", code="PREDICTOR_DROPPED"), skip_file_prefixes=CALLER)
                    preds -= set(late)
            else:  # synthpop's default: the visited columns before it
                preds = set(visit[: rank[c]])
            predictors[c] = [p for p in names if p in preds]
            if not predictors[c]:  # synthpop: "not valid for a variable without predictors"
                methods[c] = "sample"
        return ResolvedSpec(methods, visit, synth, predictors)

    def _visit(self, synthesized: Sequence[str] | None, names: list[str]) -> list[str]:
        """The visit sequence: the spec's, ``synthesized``, or the mapping's non-blank keys."""
        own = None if self.visit_sequence is None else list(self.visit_sequence)
        other = None if synthesized is None else (
            [synthesized] if isinstance(synthesized, str) else list(synthesized))
        if own is not None and other is not None and own != other:
            raise ValidationError(f"synthesized {other} and the spec's visit_sequence {own} "
                                  "differ; give the visit order once.")
        visit = own if own is not None else other
        if visit is None and isinstance(self.method, Mapping):
            visit = [c for c, v in self.method.items() if v != ""]
        if not visit:
            raise ValidationError("no visit sequence: give the spec's visit_sequence, fit's "
                                  "synthesized, or a method per column.")
        return check_names(visit, names, "visit_sequence")

    def _methods(self, visit: list[str], names: list[str]) -> dict[str, str]:
        """Every column's method (syn.r: the first visited is "sample", unvisited ones "")."""
        methods = dict.fromkeys(names, "")
        given = self.method if isinstance(self.method, Mapping) else {}
        default = "cart" if given else self.method
        for k, c in enumerate(visit):
            methods[c] = given.get(c, "sample" if k == 0 and c not in given else default)
        check_names(given, names, _METHOD)
        for c, v in given.items():
            if c not in visit and v != "":
                raise ValidationError(f"{arg_name(_METHOD)}: column {c!r} has method {v!r} but is "
                                      f"not in the visit sequence {visit}; visit it, or give it "
                                      '"".')
        return methods


def _check_method(value: Any, column: str | None) -> None:
    where = arg_name(_METHOD) + ("" if column is None else f" of column {column!r}")
    check_value(value, Options(METHODS), where)


_NUMERIC = (lambda s: not s.is_categorical, "numeric columns",
            "'logreg', 'polyreg', 'polr' or 'cart'")
_CATEGORICAL = (lambda s: s.is_categorical, "categorical columns",
                "'norm', 'normrank', 'pmm' or 'cart'")
#: what each parametric method takes (synthpop's check.method.syn): (test of the column's
#: spec, what the method is for, what to use instead), in order
_METHOD_TAKES = {
    "norm": (_NUMERIC,), "normrank": (_NUMERIC,), "pmm": (_NUMERIC,),
    "polyreg": (_CATEGORICAL,), "polr": (_CATEGORICAL,),
    "logreg": (_CATEGORICAL, (lambda s: s.n_levels <= 2, "two levels", "'polyreg'")),
}


def _check_type(method: str, col: str, schema: Schema) -> None:
    """``method`` takes column ``col`` (:data:`_METHOD_TAKES`)."""
    spec = schema[col]
    for takes, what, instead in _METHOD_TAKES.get(method, ()):
        if not takes(spec):
            kind = (f"{spec.type} with {spec.n_levels} levels" if spec.is_categorical
                    else spec.type)
            raise ValidationError(f"column {col!r} is {kind}; method {method!r} is for {what} "
                                  f"(use {instead}).", code="WRONG_DTYPE")


def _predictor_rows(pm: Any) -> dict[str, tuple[str, ...]]:
    """A predictor matrix (0/1 square table or mapping) as ``{column: predictors}``, checked."""
    if isinstance(pm, pd.DataFrame):
        rows, cols = [str(c) for c in pm.index], [str(c) for c in pm.columns]
        if sorted(rows) != sorted(cols) or len(set(rows)) != len(rows):
            lack = [c for c in cols if c not in rows]
            extra = [r for r in rows if r not in cols]
            twice = sorted({r for r in rows if rows.count(r) > 1})
            raise ValidationError(
                "predictor_matrix must name the same columns in its rows as in its columns, "
                "each once (rows are matched to columns by name, in any order):"
                + (f" no row for {lack}" if lack else "") + (f" rows {extra} name no column"
                                                             if extra else "")
                + (f" rows {twice} given twice" if twice else "")
                + f". Got rows {rows}, columns {cols}.", code="INVALID_ARGUMENT")
        # rows matched to columns by name: a matrix written with its rows in another order
        vals = pm.set_axis(rows, axis=0).loc[cols].to_numpy()
        rows = cols
        try:
            ok = ((vals == 0) | (vals == 1)).all()
        except TypeError:
            ok = False
        if not ok:
            raise ValidationError("predictor_matrix must hold only 0 and 1.",
                                  code="INVALID_ARGUMENT")
        return {r: tuple(c for c, v in zip(cols, vals[i], strict=True) if v == 1 and c != r)
                for i, r in enumerate(rows)}
    if isinstance(pm, Mapping):
        out = {}
        for r, preds in pm.items():
            preds = [preds] if isinstance(preds, str) else list(preds)
            check_value(preds, SequenceOf(COLUMN_NAMES.item, "column names", min_len=0),
                        f"predictor_matrix: the predictors of {r!r}")
            out[str(r)] = tuple(p for p in preds if p != r)
        return out
    raise ValidationError("predictor_matrix must be a DataFrame (0/1, rows and columns named by "
                          f"the data's columns) or a mapping column -> predictors. Got "
                          f"{type(pm).__name__}.", code="INVALID_ARGUMENT")
