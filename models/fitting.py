"""A registered synthesizer by name, built from the options given and fitted to a table: the
runs of ``bayes-risk fit`` (:func:`fit_model`: a model to save) and ``bayes-risk synthesize``
(:func:`fit_synthesizer`: a synthesizer to release ``m`` datasets of). Their parameters declare
the commands' options (``Annotated[T, cli_option(...)]``); the settings are checked before the
table is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from bayes_risk._specs import RECORDS_HELP, cli_option

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fit_model", "fit_synthesizer"]


def fit_model(
    original: pd.DataFrame | Callable[[], pd.DataFrame],
    method: Annotated[str | None, cli_option(
        "--method", "synthesis model (required): a name registered in the entry-point group "
        "bayes_risk.synthesizers (docs: 'Adding a model'); --synthesize is required for cart "
        "and rf, --identifying for pmm", metavar="NAME")] = None,
    *,
    columns: Annotated[Sequence[str] | None, cli_option(
        "--columns", "columns to model (default: all)", nargs="+", metavar="COL")] = None,
    synthesized: Annotated[Sequence[str] | None, cli_option(
        "--synthesize", "columns to synthesize (default: all modelled columns = full "
        "synthesis)", nargs="+", metavar="COL")] = None,
    records: Annotated[str | Sequence[int] | None, cli_option(
        "--records", "partial synthesis of selected records: only their --synthesize columns "
        "are replaced, the other records are released unchanged (the model is still fitted to "
        f"every record); {RECORDS_HELP}", metavar="RANGE|FILE")] = None,
    options: Mapping[str, Any] | None = None,
    sampling: Mapping[str, Any] | None = None,
    infer: Callable[..., Any] | None = None,
    random_seed: int | None = None,
    progressbar: bool = True,
) -> tuple[Any, pd.DataFrame]:
    """Fit the synthesizer registered as ``method`` to a table, as a model to save.

    Parameters
    ----------
    original : DataFrame or callable
        The confidential table, or a function reading it, called once the settings are
        checked.
    method : str
        A name registered in the entry-point group ``bayes_risk.synthesizers``; the model must
        save and load.
    columns : sequence of str, optional
        The columns modelled (default all).
    synthesized : sequence of str, optional
        The columns synthesized (default every modelled column).
    records : str or sequence of int, optional
        Partial synthesis of these records (0-based; a text as
        :func:`~bayes_risk._specs.parse_records` reads it): the model is fitted to every record.
    options : mapping, optional
        The model-specific options given, by their destinations
        (:func:`bayes_risk.registry.fit_options`, :func:`~bayes_risk.registry.model_settings`).
    sampling : mapping, optional
        The sampler settings given (:class:`~bayes_risk.models.Sampling`'s fields).
    infer : callable, optional
        ``infer(table, categorical_only=..., synthesized=...)``: the table's schema (default
        :func:`~bayes_risk.data.infer_schema`).
    random_seed : int, optional
    progressbar : bool

    Returns
    -------
    tuple
        The fitted model and the table it was fitted to (its ``columns``).

    Raises
    ------
    ValidationError
        No ``method``, a model that cannot be saved (``MODEL_UNSUITED``), settings the model
        does not take or needs (``OPTION_CONFLICT``, ``OPTION_REQUIRED``), bad ``records`` or
        too little memory (``MEMORY_TOO_LARGE``), before the fit.
    SchemaError
        A column of ``columns`` that is not in the table (``UNKNOWN_COLUMN``).
    """
    import numpy as np

    from bayes_risk._lazy import overlap
    from bayes_risk._memory import check_forest_memory, check_posterior_memory
    from bayes_risk.contract import capabilities
    from bayes_risk.data import infer_schema
    from bayes_risk.data.schema import check_names
    from bayes_risk.exceptions import ValidationError, arg_name, on_command_line
    from bayes_risk.models.persistence import warm_up_writer
    from bayes_risk.registry import (
        check_option_columns,
        check_required,
        fit_options,
        get_synthesizer,
        list_synthesizers,
        model_settings,
    )

    if method is None:
        raise ValidationError(f"{arg_name('method')} is required: the synthesis model, one of "
                              f"{', '.join(list_synthesizers())}.", code="OPTION_REQUIRED")
    cls = get_synthesizer(method, "method")
    info = capabilities(cls)
    if not info.persistence:
        fits = ("'fit' cannot write a model folder" if on_command_line() else
                "fit_model cannot fit it as a model to save (fit_synthesizer fits it)")
        raise ValidationError(f"{arg_name('method', repr(method), cli=method)}: {cls.__name__} "
                              f"cannot be saved (it has no save and load), so {fits}.",
                              code="MODEL_UNSUITED")
    table_options = fit_options()
    # the MCMC options given, the model-specific ones, the seed and the progress bar: each
    # only if the model takes it
    settings = model_settings(cls, method, table_options, options or {}, sampling=sampling,
                              run={"random_seed": random_seed, "progressbar": progressbar})
    # what the model cannot default (ModelInfo.required), refused before the data are read
    check_required(cls, method, synthesized=synthesized, settings=settings,
                   options=table_options)
    df = original() if callable(original) else original
    if columns:
        df = df[check_names(columns, list(df.columns), "columns")]
    schema = (infer or infer_schema)(df, categorical_only=info.categorical_only,
                                     synthesized=synthesized or None)
    check_option_columns(settings, table_options, schema)
    model = cls.from_settings(settings)  # --draws ... grouped as sampling=Sampling(...)
    fit_kw: dict[str, Any] = {}
    if records is not None:
        # every synthesizer's fit takes records= (the common fit signature, models/base.py)
        fit_kw["records"] = np.asarray(_records(records, len(df)), dtype=np.int64)
    if info.convergence:
        check_posterior_memory(model, settings, df, schema)
        # the NetCDF writer's imports run on the other core while the sampler's kernels run
        with overlap(warm_up_writer):
            model.fit(df, schema=schema, random_seed=random_seed, **fit_kw)
    else:  # CART, random forests, PMM, or a model such as an exact conjugate posterior
        check_forest_memory(model, settings, df, schema, synthesized or None)
        model.fit(df, schema=schema, synthesized=synthesized or None,
                  random_seed=random_seed, **fit_kw)
    return model, df


def fit_synthesizer(
    original: pd.DataFrame | Callable[[], pd.DataFrame],
    method: Annotated[str | None, cli_option(
        "--method", "synthesizer (required with ORIGINAL): cart, rf, pmm (Hawala's small-cell "
        "PMM of sensitive cells; synthpop's per-column 'pmm' is a --method-per-column method), "
        "or a model registered in the entry-point group bayes_risk.synthesizers (docs: 'Adding "
        "a model'); Bayesian models are fitted with 'bayes-risk fit' and synthesized with "
        "--model", metavar="NAME")] = None,
    *,
    synthesized: Annotated[Sequence[str] | None, cli_option(
        "--synthesize", "columns to synthesize, in visit order (pmm: default all --identifying)",
        nargs="+", metavar="COL")] = None,
    m: Annotated[int | None, cli_option(
        "-m", "number of synthetic datasets (default: the method's, 20 for cart/rf, 1 for pmm, "
        "5 for others and with --model)", type=int, metavar="M")] = None,
    records: Annotated[str | Sequence[int] | None, cli_option(
        "--records", "partial synthesis of selected records: only they get synthetic values, "
        "the other records keep all original values (pmm: the recipients; default the records "
        f"of sensitive cells); {RECORDS_HELP}", metavar="RANGE|FILE")] = None,
    options: Mapping[str, Any] | None = None,
    infer: Callable[..., Any] | None = None,
    probe: Callable[[Any, Any], None] | None = None,
    random_seed: Any = None,
    progressbar: bool = True,
) -> tuple[Any, int, pd.DataFrame]:
    """Fit the synthesizer registered as ``method`` (one not fitted by MCMC: those are fitted
    with :func:`fit_model`, whose convergence checks the fit reports) to a table, to release
    ``m`` datasets of.

    Parameters
    ----------
    original : DataFrame or callable
        The confidential table, or a function reading it, called once the settings are
        checked.
    method : str
        A name registered in the entry-point group ``bayes_risk.synthesizers``.
    synthesized : sequence of str, optional
        The columns synthesized, in visit order.
    m : int, optional
        The datasets of the release (default the synthesizer's ``default_m``, else 5): checked,
        and the release's size against the memory left.
    records : str or sequence of int, optional
        Partial synthesis of these records (0-based; a text as
        :func:`~bayes_risk._specs.parse_records` reads it).
    options : mapping, optional
        The model-specific options given, by their destinations
        (:func:`bayes_risk.fit_options.trees.tree_options`).
    infer : callable, optional
        ``infer(table, categorical_only=...)``: the table's schema (default
        :func:`~bayes_risk.data.infer_schema`).
    probe : callable, optional
        ``probe(release, folder)`` writes a release as the run writes it (by default its
        ``save``), run once on a few records before the memory checks
        (:func:`~bayes_risk._memory.load_what_the_run_loads`).
    random_seed : seed, optional
        The fit's stream (tree tie-breaks, forest bootstraps).
    progressbar : bool

    Returns
    -------
    tuple
        The fitted synthesizer, ``m`` and the table it was fitted to.

    Raises
    ------
    ValidationError
        A model fitted by MCMC (``OPTION_CONFLICT``), settings the model does not take or
        needs, a bad ``m``, a column that is not in the table, bad ``records`` or too little
        memory (``MEMORY_TOO_LARGE``), before the fit.
    """
    import numpy as np

    from bayes_risk._memory import check_release_size, forest_bytes, load_what_the_run_loads
    from bayes_risk.contract import capabilities
    from bayes_risk.data import check_m, infer_schema
    from bayes_risk.exceptions import ValidationError, arg_name, on_command_line
    from bayes_risk.fit_options.trees import tree_options
    from bayes_risk.registry import (
        check_option_columns,
        check_required,
        get_synthesizer,
        model_settings,
    )

    if method is None:
        raise ValidationError(f"{arg_name('method')} (cart, rf, pmm or another registered "
                              "synthesizer) is required" + (" with ORIGINAL" if on_command_line()
                                                            else "") + ".",
                              code="OPTION_REQUIRED")
    cls = get_synthesizer(method, "method")
    info = capabilities(cls)
    if info.convergence:
        # the way to fit it and synthesize, in the caller's words
        fit, how, then = (("'bayes-risk fit'", f"'bayes-risk fit ORIGINAL --method {method} "
                           "--out MODEL_DIR'", "'bayes-risk synthesize --model MODEL_DIR'")
                          if on_command_line() else
                          ("fit_model", f"fit_model(original, {method!r})",
                           "the model's synthesize(m)"))
        raise ValidationError(f"{arg_name('method', repr(method), cli=method)}: {cls.__name__} "
                              f"is fitted by MCMC, whose convergence checks {fit} reports; fit "
                              f"it with {how}, then synthesize with {then}.",
                              code="OPTION_CONFLICT")
    table_options = tree_options()
    settings = model_settings(cls, method, table_options, options or {},
                              run={"progressbar": progressbar})
    check_required(cls, method, synthesized=synthesized, settings=settings,
                   options=table_options)
    m = check_m(m if m is not None else int(getattr(cls, "default_m", 5)))
    df = original() if callable(original) else original
    schema = (infer or infer_schema)(df, categorical_only=info.categorical_only)
    check_option_columns(settings, table_options, schema)
    write = probe or (lambda release, folder: release.save(folder))
    load_what_the_run_loads(cls, settings, df, lambda fitted, folder: write(
        fitted.synthesize(1, random_seed=0), folder), schema=schema, synthesized=synthesized)
    model = cls.from_settings(settings)
    check_release_size(m, len(df), len(df.columns), float(df.memory_usage(deep=True).sum()),
                       fitted=True, forest=forest_bytes(model, len(df), synthesized or
                                                        schema.synthesized or schema.names))
    fit_records = None if records is None else np.asarray(_records(records, len(df)),
                                                          dtype=np.int64)
    model.fit(df, schema=schema, synthesized=synthesized, records=fit_records,
              random_seed=random_seed)
    return model, m, df


def _records(records: str | Sequence[int], n: int) -> list[int]:
    """``records`` as record numbers of a table of ``n`` records (a text: its numbers)."""
    from bayes_risk._specs import parse_records
    from bayes_risk.exceptions import arg_name

    if isinstance(records, str):
        return parse_records(records, n, arg_name("records")) or []
    return list(records)
