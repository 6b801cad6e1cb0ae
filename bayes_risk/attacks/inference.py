"""Inference risk as anonymeter defines it (Giomi et al. 2023): :doc:`/methods/attacks`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from bayes_risk._attack_specs import GuessSpec
from bayes_risk._constraints import (
    COLUMN_NAMES,
    Interval,
    SequenceOf,
    Within,
    check_relations,
    check_value,
)
from bayes_risk._rng import RandomSeed, as_generator
from bayes_risk._specs import as_spec, cli_option
from bayes_risk.attacks._inputs import attack_inputs, code_table, group_column, result_fields
from bayes_risk.attacks.linkability import _scale, nearest_rows
from bayes_risk.attacks.rates import (
    SuccessRate,
    check_confidence_level,
    group_labels,
    group_rows,
    rate_columns,
    success_rate,
)
from bayes_risk.data.schema import Schema
from bayes_risk.data.validate import require_distinct, require_frame
from bayes_risk.exceptions import ValidationError, arg_name
from bayes_risk.results.attacks import InferenceResult

__all__ = ["inference_risk", "correct_guesses"]


def correct_guesses(guess: np.ndarray, value: np.ndarray, *, regression: bool,
                    tolerance: float) -> np.ndarray:
    """Whether each guess is right: within ``tolerance`` of the guess in relative terms,
    ``|guess − value| <= tolerance · |guess|`` (``regression``), or equal; a missing guess of a
    missing value is right (anonymeter's ``evaluate_inference_guesses``, whose ``guess + 1e-12``
    in the denominator makes every negative guess right: the absolute value here)."""
    both_missing = np.isnan(guess) & np.isnan(value)
    with np.errstate(invalid="ignore"):
        hit = (np.abs(guess - value) <= tolerance * np.abs(guess)) if regression \
            else (guess == value)
    return hit | both_missing


#: :func:`inference_risk`'s column arguments against each other
_RELATIONS = (Within("secret", "aux_columns", apart=True,
                     why="the intruder guesses a value they do not know; leave the secret out "
                     "of aux_columns"),)


def _check_secrets(secret: Any, names: Sequence[str]) -> list[str]:
    secrets = list(check_value([secret] if isinstance(secret, str) else secret, COLUMN_NAMES,
                               "secret (a column name, or a list of them)"))
    require_distinct(secrets, "secret")
    missing = [s for s in secrets if s not in names]
    if missing:
        raise ValidationError(
            f"secret {missing} is not a column of the original (or of the schema); they are "
            f"{', '.join(names)}.", code="MISSING_COLUMN")
    return secrets


def _check_aux(aux_columns: Any, secrets: list[str], names: Sequence[str]
               ) -> dict[str, list[str]]:
    """The intruder's columns for each secret (default: every other column)."""
    if aux_columns is None:
        return {s: [c for c in names if c != s] for s in secrets}
    # the intruder's knowledge of a target
    aux = list(check_value([aux_columns] if isinstance(aux_columns, str) else aux_columns,
                           SequenceOf(COLUMN_NAMES.item, "column names", unique=True),
                           "aux_columns"))
    check_relations(dict(secret=secrets, aux_columns=aux), _RELATIONS)
    return {s: aux for s in secrets}


def _sizes(n_attacks: int | None, n_original: int, n_holdout: int | None) -> tuple[int, int | None]:
    """Records attacked in the original and in the holdout: ``n_attacks``, at most all."""
    if n_attacks is None:
        return n_original, n_holdout
    n = check_value(n_attacks, Interval(int, 1), "n_attacks")
    return min(n, n_original), None if n_holdout is None else min(n, n_holdout)


def inference_risk(
    original: pd.DataFrame,
    synthetic: Any,
    *,
    secret: Annotated[str | Sequence[str], cli_option(
        "--inference", "columns whose value the intruder guesses, each attacked on its own "
        "(without it inference is not run)", nargs="+", metavar="SECRET", group="inference")],
    aux_columns: Annotated[Sequence[str] | None, cli_option(
        "--aux-columns", "the columns the inference intruder knows of a target (default: every "
        "column but the secret)", nargs="+", metavar="COL", group="inference")] = None,
    holdout: pd.DataFrame | None = None,
    n_attacks: int | None = 500,
    guess: GuessSpec | None = None,
    schema: Schema | None = None,
    categorical: Iterable[str] | None = None,
    confidence_level: float = 0.95,
    random_seed: RandomSeed = None,
    groups: str | None = None,
) -> InferenceResult:
    """Inference risk of a synthetic release, as anonymeter measures it.

    The intruder knows the ``aux_columns`` of a target and guesses its ``secret`` as the value
    of the nearest synthetic row. Method, and how it differs from the Bayesian attribute risk:
    :doc:`/methods/attacks`.

    Parameters
    ----------
    original, synthetic, holdout, schema, categorical, confidence_level
        As in :func:`~bayes_risk.attacks.singling_out_risk`.
    secret : str or sequence of str
        The column the intruder guesses; several: each attacked on its own.
    aux_columns : sequence of str, optional
        The columns the intruder knows of a target (default: every column but the secret).
    n_attacks : int or None
        Records attacked in each of the original and the holdout, at most all of them (``None``:
        all); the baseline makes as many guesses as the main attack, at most the synthetic
        rows.
    guess : GuessSpec, optional
        See :class:`~bayes_risk.attacks.GuessSpec` (default: its defaults).
    random_seed : int, Generator or None
        Seeds the records attacked, the order of equally distant rows and the baseline.
    groups : str, optional
        A categorical column: the risk of each group of attacked records with one of its
        levels too (anonymeter's ``risk_for_groups`` groups by the secret: give the secret's
        name), in ``by_group``.

    Returns
    -------
    InferenceResult
        ``table`` (one row per dataset and secret), ``records``, ``by_group`` (with
        ``groups``), ``settings``, ``warnings``.

    Raises
    ------
    ValidationError, SchemaError
        As :func:`~bayes_risk.attacks.singling_out_risk`; a secret that is not a column, or
        among ``aux_columns``; ``regression=True`` for a categorical secret.

    Examples
    --------
    >>> res = inference_risk(train, syn, secret=["Income", "Tenure"], holdout=control,
    ...                      categorical=["Urban", "Marital", "Tenure"],
    ...                      random_seed=1)  # doctest: +SKIP
    >>> res.headline()[["dataset", "secret", "risk", "ci_low", "ci_high"]]  # doctest: +SKIP
    """
    level = check_confidence_level(confidence_level)
    guess = as_spec(guess, GuessSpec, "guess")
    regression, tol = guess.regression, guess.tolerance
    require_frame(original, "original")
    # the columns a default intruder knows: the schema's (a weights column is not a value)
    names = list(original.columns) if schema is None else list(schema.names)
    secrets = _check_secrets(secret, names)
    aux = _check_aux(aux_columns, secrets, names)
    group_column(groups, names)
    # the secrets are checked above: a column the data lacks is one of aux_columns
    cols = list(dict.fromkeys([*secrets, *(c for s in secrets for c in aux[s]),
                               *([] if groups is None else [groups])]))
    inp = attack_inputs(original, synthetic, holdout, columns=cols, schema=schema,
                        categorical=categorical, argument="aux_columns")
    sch = inp.schema
    labels = None if groups is None else group_labels(sch, groups)
    is_cat = np.array([s.is_categorical for s in sch])
    col = {c: sch.names.index(c) for c in cols}
    reg = {s: _regression(s, bool(is_cat[col[s]]), regression) for s in secrets}
    n_main, n_ctrl = _sizes(n_attacks, len(inp.original),
                            None if inp.holdout is None else len(inp.holdout))

    rng = as_generator(random_seed)
    t_rng, ds_parent = rng.spawn(2)
    roles = [("original", inp.original, n_main)] + (
        [] if inp.holdout is None else [("holdout", inp.holdout, n_ctrl)])
    attacked = {role: np.sort(g.choice(len(t), size=n, replace=False))
                for (role, t, n), g in zip(roles, t_rng.spawn(2), strict=False)}
    coded = {role: code_table(t, sch)[attacked[role]] for role, t, _ in roles}
    O_all = code_table(inp.original, sch)

    rows: list[dict[str, Any]] = []
    grouped: list[dict[str, Any]] = []
    recs: list[pd.DataFrame] = []
    flagged: dict[str, list[str]] = {}
    for l, (z, ds_rng) in enumerate(zip(inp.datasets, ds_parent.spawn(len(inp.datasets)),
                                        strict=True), start=1):
        S = code_table(z, sch)
        n_base = min(len(S), n_main)
        for s, s_rng in zip(secrets, ds_rng.spawn(len(secrets)), strict=True):
            j, a = col[s], np.array([col[c] for c in aux[s]])
            role_rng = dict(zip(("original", "holdout", "baseline"), s_rng.spawn(3),
                                strict=True))
            right: dict[str, np.ndarray] = {}
            tied: dict[str, np.ndarray] = {}
            for role, _, _ in roles:
                right[role], tied[role] = _guesses(coded[role], S, j, a, is_cat, reg[s], tol,
                                                   role_rng[role])
            k_base = _baseline(O_all, S, j, n_base, reg[s], tol, role_rng["baseline"])
            row, r_base = _secret_row(l, s, reg[s], (n_main, n_ctrl, n_base), right, k_base,
                                      tied, level, flagged)
            rows.append(row)
            if labels is not None:
                g = col[groups]
                grouped += group_rows(
                    {"dataset": l, "secret": s},
                    (coded["original"][:, g], right["original"]),
                    None if "holdout" not in right else (coded["holdout"][:, g],
                                                         right["holdout"]),
                    r_base, labels, level)
            for role, _, _ in roles:
                recs.append(pd.DataFrame({"dataset": l, "secret": s, "role": role,
                                          "row": attacked[role], "correct": right[role],
                                          "tied": tied[role]}))
    settings = {"secrets": secrets, "aux_columns": aux, "aux_default": aux_columns is None,
                "regression": reg, "tolerance": tol, "n_attacks": n_main,
                "n_attacks_control": n_ctrl}
    return InferenceResult(
        table=pd.DataFrame(rows), records=pd.concat(recs, ignore_index=True),
        **result_fields(inp, flagged, _WHY, settings, level=level, random_seed=random_seed,
                        groups=groups, grouped=grouped))


def _secret_row(l: int, s: str, regression: bool, sizes: tuple[int, int | None, int],
                right: dict[str, np.ndarray], k_base: int, tied: dict[str, np.ndarray],
                level: float, flagged: dict[str, list[str]]) -> tuple[dict[str, Any], SuccessRate]:
    """The table's row of secret ``s`` on dataset ``l``: the right guesses of the main and
    control attacks (``right``, by role) and of the baseline (``k_base``) out of ``sizes``
    (main, control, baseline), their rates and the shares of tied nearest rows. Flags an attack
    no better than the baseline and a control always right; also returns the baseline's rate
    (the groups' reference)."""
    n_main, n_ctrl, n_base = sizes
    k_main = int(right["original"].sum())
    k_ctrl = int(right["holdout"].sum()) if "holdout" in right else None
    r_main = success_rate(k_main, n_main, level)
    r_base = success_rate(k_base, n_base, level)
    r_ctrl = None if k_ctrl is None else success_rate(k_ctrl, n_ctrl, level)
    if r_base.rate >= r_main.rate:
        flagged.setdefault("ATTACK_NOT_BETTER_THAN_BASELINE", []).append(
            f"dataset {l} {s}: main {r_main.rate:.3g}, baseline {r_base.rate:.3g}")
    if k_ctrl is not None and k_ctrl >= n_ctrl:
        flagged.setdefault("CONTROL_ALWAYS_SUCCEEDS", []).append(f"dataset {l} {s}")
    return {
        "dataset": l, "secret": s, "regression": regression, "n_attacks": n_main,
        "n_attacks_control": np.nan if n_ctrl is None else n_ctrl,
        "n_attacks_baseline": n_base, "n_main": k_main,
        "n_control": np.nan if k_ctrl is None else k_ctrl, "n_baseline": k_base,
        **rate_columns(r_main, r_ctrl, r_base),
        "share_tied_main": float(tied["original"].mean()),
        "share_tied_control": (float(tied["holdout"].mean()) if "holdout" in tied
                               else np.nan)}, r_base


def _regression(secret: str, categorical: bool, regression: bool | None) -> bool:
    """Whether ``secret`` is guessed as a number (right within the tolerance) or as a value
    (right when equal): ``regression``, by default for a numeric secret."""
    if regression and categorical:
        raise ValidationError(
            f"{arg_name('regression', True, cli='yes')} for the categorical secret {secret!r}: "
            "a guess of a category is right only when equal; give "
            f"{arg_name('regression', None, cli='auto')} or "
            f"{arg_name('regression', False, cli='no')}.", code="INVALID_ARGUMENT")
    return (not categorical) if regression is None else bool(regression)


def _baseline(O: np.ndarray, S: np.ndarray, j: int, n: int, regression: bool, tol: float,
              rng: np.random.Generator) -> int:
    """The baseline's right guesses: ``n`` records of the original (``O``, coded), each
    guessed as a random synthetic row's value of column ``j`` (anonymeter draws both without
    replacement)."""
    b_tgt, b_row = rng.spawn(2)
    who = b_tgt.choice(len(O), size=n, replace=False)
    guess = S[b_row.choice(len(S), size=n, replace=False), j]
    return int(correct_guesses(guess, O[who, j], regression=regression, tolerance=tol).sum())


def _guesses(T: np.ndarray, S: np.ndarray, j: int, a: np.ndarray, is_cat: np.ndarray,
             regression: bool, tol: float, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray]:
    """Whether each attacked record's (``T``, coded) secret column ``j`` is guessed right from
    its nearest synthetic row (``S``) on the columns ``a``, and whether that row was one of
    several equally near."""
    scale = _scale(np.concatenate([S[:, a], T[:, a]]), is_cat[a])
    # one seeded order of the synthetic rows per target: equally distant rows are taken at
    # random, whatever the blocks
    seeds = np.random.SeedSequence(rng.integers(2**63, size=4).tolist()).spawn(len(T))
    idx, tied = nearest_rows(T[:, a], S[:, a], is_cat[a], scale, 1, seeds)
    return correct_guesses(S[idx[:, 0], j], T[:, j], regression=regression,
                           tolerance=tol), tied


#: what each condition means (the warning names the datasets and secrets it concerns)
_WHY = {
    "ATTACK_NOT_BETTER_THAN_BASELINE": "the main attack guesses no more secrets right than "
    "random synthetic values do: the attack may be too weak for these columns, and a low risk "
    "then says little (anonymeter: 'Analysis results cannot be trusted')",
    "CONTROL_ALWAYS_SUCCEEDS": "every secret of the holdout is guessed right: the risk beyond "
    "the control attack is undefined (nan)"}
