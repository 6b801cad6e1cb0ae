"""A registered synthesizer by name, built from the options given and fitted to a table: the
runs of ``bayes-risk fit`` (:func:`fit_model`: a model to save) and ``bayes-risk synthesize``
(:func:`fit_synthesizer`: a synthesizer to release ``m`` datasets of). Their parameters declare
the commands' options (``Annotated[T, cli_option(...)]``); the settings are checked before the
table is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from bayes_risk._constraints import (
    Flag,
    HasMethods,
    InstanceOf,
    Interval,
    SequenceOf,
    Text,
    check_params,
)
from bayes_risk._specs import RECORDS_HELP, cli_option

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fit_model", "fit_synthesizer"]

_METHOD = [Text("a registered synthesizer's name"), None]
#: one column name, or several, each once
_COLUMNS = [Text("a column name"),
            SequenceOf(Text("a column name"), "column names", unique=True), None]
#: a column listed twice is named by the schema's check, with the list (require_distinct)
_SYNTHESIZED = [Text("a column name"), SequenceOf(Text("a column name"), "column names"), None]
_RECORDS = [Text("record numbers as text ('0-9,20', or a file of them)"),
            SequenceOf(Interval(int, 0), "record numbers >= 0", unique=True), None]
_OPTIONS = [InstanceOf(Mapping, "a mapping of the model's settings by name"), None]
_FUNCTION = [InstanceOf(Callable, "a function"), None]

#: the arguments of :func:`fit_model`, checked before anything else
_FIT_MODEL = {
    "method": _METHOD, "columns": _COLUMNS, "synthesized": _SYNTHESIZED, "records": _RECORDS,
    "options": _OPTIONS,
    "sampling": [InstanceOf(Mapping, "a mapping of sampler settings by name"), None],
    "infer": _FUNCTION, "random_seed": [Interval(int, 0), None], "progressbar": Flag(),
}
#: the arguments of :func:`fit_synthesizer`, checked before anything else
_FIT_SYNTHESIZER = {
    "method": _METHOD, "synthesized": _SYNTHESIZED, "m": [Interval(int, 1), None],
    "records": _RECORDS, "options": _OPTIONS, "infer": _FUNCTION, "probe": _FUNCTION,
    "random_seed": [Interval(int, 0), SequenceOf(Interval(int, 0), "integers >= 0"),
                    HasMethods(("spawn",), "a numpy Generator or SeedSequence"), None],
    "progressbar": Flag(),
}


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

    Every argument is checked, and the model's settings against what it takes, before the
    table is read.

    Parameters
    ----------
    original : DataFrame or callable
        The confidential table, or a function of no arguments returning it, called once the
        arguments are checked.
    method : str
        Required: a name registered in the entry-point group ``bayes_risk.synthesizers``
        (``cart``, ``dpmpm``, ...); the model must save and load.
    columns : str or sequence of str, optional
        The columns modelled, each once (default all).
    synthesized : str or sequence of str, optional
        The columns synthesized, each once (default every modelled column).
    records : str or sequence of int, optional
        Partial synthesis of these records, each once (0-based; or a text such as
        ``"0-9,20"`` or the path of a file of record numbers): the model is fitted to every
        record.
    options : mapping, optional
        The model's settings by the names its class takes (``{"n_components": 10}`` for
        ``dpmpm``, ``{"min_leaf": 3}`` for ``cart``), each checked by the model.
    sampling : mapping, optional
        The sampler settings of a model fitted by MCMC
        (:class:`~bayes_risk.models.Sampling`'s fields: ``{"draws": 500, "chains": 2}``).
    infer : callable, optional
        ``infer(table, categorical_only=..., synthesized=...)``: the table's schema (default
        :func:`~bayes_risk.data.infer_schema`).
    random_seed : int, optional
        The seed of the fit (an integer >= 0; default fresh entropy).
    progressbar : bool, default True
        Show the sampler's progress bar.

    Returns
    -------
    model : BaseSynthesizer
        The fitted model.
    table : DataFrame
        The table it was fitted to (its ``columns``).

    Raises
    ------
    ValidationError
        Before the table is read: an argument of the wrong type or value, no ``method`` or an
        unknown one (``UNKNOWN_SYNTHESIZER``), a key of ``sampling`` that is no sampler
        setting, a model that cannot be saved (``MODEL_UNSUITED``), a setting of ``options``
        or ``sampling`` the model does not take (``OPTION_CONFLICT``, naming the settings it
        takes) or one it needs (``OPTION_REQUIRED``); then bad ``records``, a setting the
        model refuses, or too little memory (``MEMORY_TOO_LARGE``), before the fit.
    SchemaError
        A column of ``columns`` or ``synthesized`` that is not in the table
        (``UNKNOWN_COLUMN``).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"sex": ["f", "m"] * 20, "age": [float(i % 9) for i in range(40)]})
    >>> model, fitted_to = fit_model(table, "cart", synthesized=["age"],
    ...                              options={"min_leaf": 5}, random_seed=1, progressbar=False)
    >>> list(model.synthesize(1, random_seed=2)[0].columns)
    ['sex', 'age']
    >>> fit_model(table, "cart", synthesized=["age"], options={"n_trees": 10})
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: options: 'n_trees' is not a setting of method='cart'; ...
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

    check_params(locals(), _FIT_MODEL)
    if sampling:
        import dataclasses

        from bayes_risk._constraints import check_keywords
        from bayes_risk._sampling_spec import Sampling

        check_keywords(sampling, [f.name for f in dataclasses.fields(Sampling)], "sampling")
    _check_original(original)
    if method is None:
        raise ValidationError(f"{arg_name('method')} is required: the synthesis model, one of "
                              f"{', '.join(list_synthesizers())}.", code="OPTION_REQUIRED")
    cls = get_synthesizer(method, argument="method")
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
    df = _read(original)
    if columns is not None:
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

    Every argument is checked, and the model's settings against what it takes, before the
    table is read.

    Parameters
    ----------
    original : DataFrame or callable
        The confidential table, or a function of no arguments returning it, called once the
        arguments are checked.
    method : str
        Required: a name registered in the entry-point group ``bayes_risk.synthesizers``
        (``cart``, ``rf``, ``pmm``, ...).
    synthesized : str or sequence of str, optional
        The columns synthesized, in visit order, each once.
    m : int, optional
        The datasets of the release (default the synthesizer's ``default_m``, else 5): checked,
        and the release's size against the memory left.
    records : str or sequence of int, optional
        Partial synthesis of these records, each once (0-based; or a text such as
        ``"0-9,20"`` or the path of a file of record numbers).
    options : mapping, optional
        The model's settings by the names its class takes (``{"min_leaf": 3}`` for ``cart``,
        ``{"identifying": ["sex", "age"]}`` for ``pmm``), each checked by the model.
    infer : callable, optional
        ``infer(table, categorical_only=...)``: the table's schema (default
        :func:`~bayes_risk.data.infer_schema`).
    probe : callable, optional
        ``probe(release, folder)`` writes a release as the caller will write it (by default
        its ``save``); run once on a few records before the memory checks.
    random_seed : int, sequence of int, Generator or SeedSequence, optional
        The fit's stream (tree tie-breaks, forest bootstraps; default fresh entropy).
    progressbar : bool, default True
        Show the fit's progress bar, where the synthesizer has one.

    Returns
    -------
    model : BaseSynthesizer
        The fitted synthesizer.
    m : int
        The number of datasets to release.
    table : DataFrame
        The table it was fitted to.

    Raises
    ------
    ValidationError
        Before the table is read: an argument of the wrong type or value, no ``method`` or an
        unknown one (``UNKNOWN_SYNTHESIZER``), a model fitted by MCMC (``OPTION_CONFLICT``), a
        setting of ``options`` the model does not take (``OPTION_CONFLICT``, naming the
        settings it takes) or one it needs (``OPTION_REQUIRED``); then bad ``records``, a
        setting the model refuses or too little memory (``MEMORY_TOO_LARGE``), before the
        fit.
    SchemaError
        A column of ``synthesized`` or of a setting naming columns that is not in the table
        (``UNKNOWN_COLUMN``).

    Examples
    --------
    >>> import pandas as pd
    >>> table = pd.DataFrame({"sex": ["f", "m"] * 20, "age": [float(i % 9) for i in range(40)]})
    >>> model, m, fitted_to = fit_synthesizer(table, "cart", synthesized=["age"], m=2,
    ...                                       options={"min_leaf": 5}, random_seed=1,
    ...                                       progressbar=False)
    >>> release = model.synthesize(m, random_seed=2)
    >>> len(release), list(release[0].columns)
    (2, ['sex', 'age'])
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

    m = check_params(locals(), _FIT_SYNTHESIZER)["m"]
    _check_original(original)
    if method is None:
        raise ValidationError(f"{arg_name('method')} (cart, rf, pmm or another registered "
                              "synthesizer) is required" + (" with ORIGINAL" if on_command_line()
                                                            else "") + ".",
                              code="OPTION_REQUIRED")
    cls = get_synthesizer(method, argument="method")
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
    m = m if m is not None else check_m(int(getattr(cls, "default_m", 5)))
    df = _read(original)
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


def _check_original(original: Any) -> None:
    """Refuse an ``original`` that is neither a table nor a function of no arguments."""
    import inspect

    import pandas as pd

    from bayes_risk._constraints import check_value
    from bayes_risk.data.schema import FRAME
    from bayes_risk.exceptions import ValidationError

    check_value(original, [FRAME, InstanceOf(Callable, "a function of no arguments "
                                                       "returning one")], "original")
    if isinstance(original, pd.DataFrame):
        return
    try:
        inspect.signature(original).bind()
    except TypeError as err:
        raise ValidationError(f"original, a function, must take no arguments. Got "
                              f"{original!r}, which needs arguments ({err}).") from None
    except ValueError:  # no signature to read (a built-in): called as it is
        pass


def _read(original: Any) -> pd.DataFrame:
    """The table ``original`` is or returns."""
    from bayes_risk.data.validate import require_frame

    return require_frame(original() if callable(original) else original, "original")


def _records(records: str | Sequence[int], n: int) -> list[int]:
    """``records`` as record numbers of a table of ``n`` records (a text: its numbers)."""
    from bayes_risk._specs import parse_records
    from bayes_risk.exceptions import arg_name

    if isinstance(records, str):
        return parse_records(records, n, arg_name("records")) or []
    return list(records)
