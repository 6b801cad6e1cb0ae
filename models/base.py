"""Base class of every synthesizer (scikit-learn's estimator contract: ``fit`` / ``synthesize``
/ ``get_params``), model loading and rebuilding. See :doc:`/user_guide/synthesizers`.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bayes_risk.exceptions import NotFittedError, ValidationError, arg_name, on_command_line
from bayes_risk.registry import get_synthesizer, list_synthesizers

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from bayes_risk._rng import RandomSeed
    from bayes_risk.data.schema import Schema
    from bayes_risk.data.synthetic import SyntheticData

__all__ = [
    "BaseSynthesizer",
    "check_is_fitted",
    "FittedAttribute",
    "load_model",
    "get_synthesizer",
    "list_synthesizers",
    "rebuild_synthesizer",
    "rebuildable_synthesizer",
    "synthesized_columns",
]

class BaseSynthesizer(metaclass=ABCMeta):
    """Base class of the synthesizers: ``fit`` / ``synthesize`` and ``get_params`` (read from
    the ``__init__`` signature)."""

    #: name under which the class is registered in :func:`bayes_risk.models.get_synthesizer`
    method_name: str = "base"
    #: synthetic datasets of a release by default (``bayes-risk synthesize -m``)
    default_m: int = 5

    def fit(
        self,
        data: pd.DataFrame,
        *,
        schema: Schema | None = None,
        synthesized: Sequence[str] | None = None,
        records: Any = None,
        random_seed: RandomSeed = None,
    ) -> BaseSynthesizer:
        """Learn from the confidential table and return ``self``.

        Parameters
        ----------
        data : DataFrame
            The confidential table.
        schema : Schema, optional
            Column types, levels and roles (default: inferred from ``data``).
        synthesized : sequence of str, optional
            Columns to synthesize (default: the schema's synthesized columns, else the model's
            default).
        records : boolean mask or integer positions, optional
            Records whose synthesized values are replaced (default: the model's default, usually
            every record); the others are released unchanged.
        random_seed : RandomSeed
            Seed of the fit (default: the ``random_seed`` setting).

        Returns
        -------
        BaseSynthesizer
            ``self``, fitted.

        Raises
        ------
        ValidationError, SchemaError
            For invalid settings, columns or record selection.
        NotImplementedError
            For a model that is only built from draws made elsewhere (``from_posterior``).
        """
        raise NotImplementedError(
            f"{type(self).__name__} cannot be fitted by bayes-risk; build it from posterior draws "
            "made elsewhere (from_posterior) or load a saved model."
        )

    @abstractmethod
    def synthesize(self, m: int = 1, *, random_seed: RandomSeed = None) -> SyntheticData:
        """Generate ``m`` synthetic datasets (same seed, same datasets).

        Parameters
        ----------
        m : int
            Number of synthetic datasets.
        random_seed : RandomSeed
            Seed of the synthesis draws (default: the ``random_seed`` setting).

        Returns
        -------
        SyntheticData
        """

    def _seed(self, random_seed: RandomSeed) -> RandomSeed:
        """``random_seed`` if given, else the ``random_seed`` setting."""
        return getattr(self, "random_seed", None) if random_seed is None else random_seed

    def _fit_seed(self, random_seed: RandomSeed) -> RandomSeed:
        """The seed of ``fit``: the setting, or ``random_seed`` when the setting is ``None``;
        ``SEED_CONFLICT`` when both are given and differ."""
        setting = getattr(self, "random_seed", None)
        if random_seed is None or random_seed is setting:
            return setting
        if setting is None:
            return random_seed
        if not _same_seed(setting, random_seed):
            raise ValidationError(
                f"{type(self).__name__} was created with random_seed={setting!r} and fit was "
                f"given random_seed={random_seed!r}. Give the seed once: in the constructor "
                "(scikit-learn style; get_params and clone then reproduce the fit) or to fit "
                f"with the setting left at None, e.g. {type(self).__name__}(...)"
                ".set_params(random_seed=None).fit(data, random_seed=...).",
                code="SEED_CONFLICT",
            )
        return random_seed

    def release_settings(self) -> dict[str, Any]:
        """The settings as a release's manifest and a saved folder hold them: flat,
        :meth:`get_params` (``deep=False``) with the seed as JSON; :meth:`from_settings` reads
        them back (a part of the persistence protocol, ``bayes_risk.models.persistence``).

        Returns
        -------
        dict
            Setting name → value.
        """
        from bayes_risk._rng import seed_to_json

        params = self.get_params(deep=False)
        if "random_seed" in params:
            params["random_seed"] = seed_to_json(params["random_seed"])
        return params

    def saved_settings(self) -> dict[str, Any]:
        """The settings ``model.json`` holds, JSON-ready: :meth:`release_settings`, which a
        family extends with what its settings need written out (DPMPM's structural zeros, the
        PyMC model function's path); a part of the persistence protocol.

        Returns
        -------
        dict
        """
        from bayes_risk._io import to_jsonable

        return to_jsonable(self.release_settings())

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> BaseSynthesizer:
        """A new model from its settings as a saved model, a release's manifest or the command
        line hold them (flat: ``get_params(deep=False)``'s, the Bayesian models' sampler
        settings each under its own name).

        Parameters
        ----------
        settings : mapping
            Setting name → value.

        Returns
        -------
        BaseSynthesizer

        Raises
        ------
        ValidationError
            A setting the model does not take (a file written for another model or version),
            naming the valid ones (``INVALID_ARGUMENT``).
        """
        cls._refuse_unknown_settings(settings)
        return cls(**settings)

    @classmethod
    def _refuse_unknown_settings(cls, names: Iterable[str]) -> None:
        """``INVALID_ARGUMENT`` naming the first of ``names`` that is no setting of ``cls``, and
        the valid ones (the one place this is checked)."""
        unknown = [k for k in names if k not in cls._param_names()]
        if unknown:
            raise ValidationError(
                f"{cls.__name__} has no setting {unknown[0]!r}; valid settings are "
                f"{getattr(cls, 'setting_names', cls._param_names)()}.", code="INVALID_ARGUMENT")

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The settings passed to ``__init__``, as stored (scikit-learn's ``get_params``).

        Parameters
        ----------
        deep : bool, default True
            Also list the settings of settings that are estimators themselves (any object
            with ``get_params``), as ``<setting>__<name>``.

        Returns
        -------
        dict
            Setting name → value.
        """
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> BaseSynthesizer:
        """Change settings (``<setting>__<name>`` for a setting's own settings) and return
        ``self``; a fitted model keeps its fit until the next ``fit``.

        Raises
        ------
        ValidationError
            For a name that is not a setting (``INVALID_ARGUMENT``), naming the valid ones.
        """
        self._refuse_unknown_settings(k.partition("__")[0] for k in params)
        nested: dict[str, dict[str, Any]] = {}
        for k, v in params.items():
            name, sep, sub = k.partition("__")
            if sep:
                nested.setdefault(name, {})[sub] = v
            else:
                setattr(self, name, v)
        for name, sub_params in nested.items():
            value = getattr(self, name)
            if dataclasses.is_dataclass(value) and not hasattr(value, "set_params"):
                # a frozen spec (Sampling): replaced by a copy with the fields changed
                setattr(self, name, dataclasses.replace(value, **sub_params))
            else:
                value.set_params(**sub_params)
        return self

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: no estimator type, no target (sklearn imported lazily)."""
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    input_tags=InputTags(categorical=True, string=True, allow_nan=True))

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has run (for scikit-learn's ``check_is_fitted``)."""
        try:
            check_is_fitted(self)
        except NotFittedError:
            return False
        return True

    def text_lines(self) -> list[str]:
        """The fit in words, as ``bayes-risk fit`` prints it: the table it was fitted to, the
        columns it synthesizes, its identity and that its saved folder holds the confidential
        data (a Bayesian model: its run and convergence checks instead).

        Returns
        -------
        list of str
            One line each.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        head, lines = self._fit_lines()
        return [head, *lines, "the model folder holds the confidential data: keep it as "
                "confidential as the data"]

    def _fit_lines(self) -> tuple[str, list[str]]:
        """The headline of the fit and the lines naming its columns and identity."""
        from bayes_risk.data.provenance import model_id

        check_is_fitted(self, "schema_", method="text_lines")
        # the columns the fitted model synthesizes (a PyMC model: the observed ones), not the
        # types it was given (issue 85: every column of a PyMC fit was named)
        fitted, mid = self.schema_, model_id(self)
        n = getattr(self, "n_records", None) or (
            getattr(self, "original_fingerprint_", None) or {}).get("n_records")
        head = f"fitted {self.method_name} to {n} records x {len(fitted.names)} columns"
        return head, [
            f"synthesized columns: {', '.join(map(str, fitted.synthesized or fitted.names))}",
            *([] if mid is None else [f"model id: {mid[:16]} (recorded in model.json and in "
                                      "the manifest of every release it makes)"])]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"


def _same_seed(a: Any, b: Any) -> bool:
    """Equal integers or integer sequences; a generator or seed sequence equals only itself."""
    import numpy as np

    def key(x: Any) -> Any:
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            return int(x)
        if isinstance(x, (list, tuple, np.ndarray)):
            items = [key(v) for v in x]
            return None if any(not isinstance(i, int) for i in items) else tuple(items)
        return None

    ka, kb = key(a), key(b)
    return a is b if ka is None or kb is None else ka == kb


def synthesized_columns(synthesized: Any, schema: Schema) -> list[str] | None:
    """Validate a ``synthesized=`` argument of ``fit``: ``None`` or the named columns, in order.

    Raises
    ------
    ValidationError
        For an empty selection, a column named twice or a value that is not column names.
    SchemaError
        For a name that is not a column of the schema (code ``UNKNOWN_COLUMN``).
    """
    if synthesized is None:
        return None
    from bayes_risk._constraints import COLUMN_NAMES, check_value
    from bayes_risk.data.validate import require_distinct

    # None: the model's default columns
    cols = list(check_value([synthesized] if isinstance(synthesized, str) else synthesized,
                            COLUMN_NAMES, "synthesized (a column name, or a sequence of them)"))

    require_distinct(cols, "synthesized")
    return schema.check_columns(cols, "synthesized")


def check_is_fitted(
    model: Any, attribute: str | tuple[str, ...] | None = None, *, method: str | None = None,
    how: str = "with appropriate arguments",
) -> None:
    """Raise :class:`NotFittedError` unless ``model`` has a fitted (``_``-suffixed) attribute,
    or the named ``attribute`` (each of them); ``method`` is named in the message, ``how``
    says how to fit it (the one place this is checked)."""
    if attribute is not None:
        fitted = all(getattr(model, a, None) is not None
                     for a in ((attribute,) if isinstance(attribute, str) else attribute))
    else:
        fitted = any(
            k.endswith("_") and not k.startswith("__") and v is not None
            for k, v in vars(model).items()
        )
    if not fitted:
        raise _not_fitted(model, f"'{method}'" if method else "using it", how)


def _not_fitted(model: Any, before: str, how: str = "with appropriate arguments"
                ) -> NotFittedError:
    return NotFittedError(
        f"This {type(model).__name__} instance is not fitted yet. Call 'fit' {how} before "
        f"{before}.",
        code="NOT_FITTED"
    )


class FittedAttribute:
    """A fitted attribute declared on the class (scikit-learn's trailing ``_``): ``fit`` sets it
    on the instance, whose value then shadows this descriptor; read before, it raises
    :class:`~bayes_risk.exceptions.NotFittedError` (``NOT_FITTED``), as scikit-learn's
    ``check_is_fitted`` does. ``NotFittedError`` is an ``AttributeError``, so ``hasattr`` and
    ``getattr(model, name, None)`` still answer "not fitted".

    Parameters
    ----------
    doc : str
        The attribute's docstring (what the API reference shows).
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        # only reached while the instance has no value of its own (a non-data descriptor)
        raise _not_fitted(obj, f"reading '{self.name}'")


def load_model(path: str | os.PathLike[str], *, original: Any = None,
               allow_different_original: bool = False, model_function: Any = None) -> Any:
    """Load a fitted model saved with its ``save(path)`` method (the class registered under
    ``model.json``'s ``"method"`` reads the folder: an installed synthesizer, never code the
    folder names; :doc:`/user_guide/security`).

    Parameters
    ----------
    path : path-like
        The model's folder.
    model_function : str or callable, optional
        A PyMC model's function, ``"module:function"`` or the function itself: required for a
        :class:`~bayes_risk.models.PyMCSynthesizer` folder, and it must be the one the folder
        names (:meth:`PyMCSynthesizer.load <bayes_risk.models.PyMCSynthesizer.load>`);
        refused for the other models, which run no code of the user's.
    original : DataFrame, optional
        The table the model is used with: refused unless it is the table the model was fitted
        to (:func:`~bayes_risk.data.fingerprint.check_model_original`).
    allow_different_original : bool, default False
        With ``original``: warn (``ORIGINAL_DIFFERS``) instead of raising for another table.

    Raises
    ------
    ValidationError
        If the folder is not a saved model, or ``original`` is not the table it was fitted to
        (``ORIGINAL_DIFFERS``); ``MODEL_FUNCTION_REQUIRED``, ``MODEL_FUNCTION_MISMATCH`` (a
        PyMC model); ``OPTION_CONFLICT`` for ``model_function`` with another model.
    """
    import inspect

    from bayes_risk.models.persistence import read_model_meta

    p, meta = read_model_meta(path)
    method = meta.get("method")
    cls = get_synthesizer(method)  # the entry point registered under that name
    if not callable(getattr(cls, "load", None)):
        raise ValidationError(f"models of type {method!r} cannot be loaded from disk.",
                              code="MODEL_UNSUITED")
    takes = "model_function" in inspect.signature(cls.load).parameters
    if model_function is not None and not takes:
        raise ValidationError(
            f"{arg_name('model_function')} is for a PyMC model; the model folder {str(p)!r} "
            f"holds a {method!r} model, which runs no model function: leave it out.",
            code="OPTION_CONFLICT")
    model = cls.load(p, model_function=model_function) if takes else cls.load(p)
    if original is not None:
        from bayes_risk.data.fingerprint import check_model_original

        check_model_original(model, original, allow_different_original=allow_different_original,
                             source=str(path))
    return model


def load_like(model: Any, path: str | os.PathLike[str]) -> Any:
    """A folder saved by a model of ``model``'s class, loaded with the code ``model`` already
    runs (a PyMC model's function, :meth:`PyMCSynthesizer.load
    <bayes_risk.models.PyMCSynthesizer.load>`): the refit cache's entries, a contract check's
    round trip."""
    import inspect

    load = type(model).load
    if "model_function" in inspect.signature(load).parameters:
        return load(path, model_function=model.model_function)
    return load(path)


def _same_cells(a: Any, b: Any) -> bool:
    """Equal values, with missing cells (empty in either column) in the same places."""
    import numpy as np
    import pandas as pd

    x, y = a.astype(object).to_numpy(), b.astype(object).to_numpy()
    mx, my = np.asarray(pd.isna(x), dtype=bool), np.asarray(pd.isna(y), dtype=bool)
    return bool(np.array_equal(mx, my) and np.array_equal(x[~mx], y[~my]))


def rebuildable_synthesizer(synthetic: Any) -> type | None:
    """The registered synthesizer class that made a release, when it declares a plug-in
    likelihood (:func:`~bayes_risk.contract.capabilities`) and so can be rebuilt
    (:func:`rebuild_synthesizer`); ``None`` otherwise.

    Parameters
    ----------
    synthetic : SyntheticData
        The release (its ``method`` is the synthesizer's registered name).

    Raises
    ------
    ValidationError
        If the release names a registered synthesizer that cannot be loaded
        (``SYNTHESIZER_BROKEN``, ``SYNTHESIZER_CLASH``).
    """
    from bayes_risk.contract import capabilities

    method = getattr(synthetic, "method", None)
    if not isinstance(method, str) or method not in list_synthesizers():
        return None
    cls = get_synthesizer(method)
    return cls if capabilities(cls).plugin_likelihood else None


def rebuild_synthesizer(original: Any, synthetic: Any, *, verify: bool = True) -> Any:
    """Refit the synthesizer that produced a release (CART, random forests), from its manifest
    and the original; :func:`rebuildable_synthesizer` says which releases qualify.

    Parameters
    ----------
    original : DataFrame
        The confidential table the release was made from (same rows, same order).
    synthetic : SyntheticData
        The release, made by ``CARTSynthesizer`` or ``RandomForestSynthesizer`` fitted with a
        replayable ``random_seed`` (an integer or a sequence of integers).
    verify : bool, default True
        Synthesize again with the release's seed and require every dataset to be reproduced
        exactly (proof that the rebuilt synthesizer made the release).

    Returns
    -------
    BaseSynthesizer
        Fitted (e.g. a CARTSynthesizer or RandomForestSynthesizer).

    Raises
    ------
    ValidationError
        If the release was not made by a registered synthesizer with a plug-in likelihood
        or does not record a replayable seed (``NOT_REBUILDABLE``), or is not reproduced.
    """
    import numpy as np
    import pandas as pd

    from bayes_risk._constraints import InstanceOf, check_value
    from bayes_risk.data.synthetic import SyntheticData
    check_value(synthetic, InstanceOf(SyntheticData, "a SyntheticData release "
                                                     "(read_synthetic(folder))"), "synthetic")
    cls = rebuildable_synthesizer(synthetic)
    if cls is None:
        raise ValidationError(
            f"the release was made by {synthetic.method!r}, which is not a registered "
            "synthesizer declaring a plug-in likelihood (as CART and random forests do), so it "
            "cannot be rebuilt; a Bayesian model is "
            + ("saved with 'bayes-risk fit' and " if on_command_line() else "fitted and ")
            + f"passed as {arg_name('model')}.", code="NOT_REBUILDABLE")
    call = (synthetic.extra or {}).get("fit_call")
    if not call or call.get("random_seed") is None:
        raise ValidationError(
            "the release does not record a replayable seed for fitting the synthesizer (fit "
            "with an integer random_seed, as 'bayes-risk synthesize' does), so the synthesizer "
            "cannot be rebuilt; pass the fitted synthesizer to CARTPlugin/RFPlugin instead.",
            code="NOT_REBUILDABLE"
        )
    n = len(synthetic.datasets[0])
    if not isinstance(original, pd.DataFrame) or len(original) != n:
        raise ValidationError(
            f"original must be the confidential DataFrame of {n} records the "
            f"release was made from; got {type(original).__name__} with "
            f"{len(original) if hasattr(original, '__len__') else '?'} rows."
        )
    # the settings a release records (flat: a Bayesian model's sampler settings by name)
    params = set(getattr(cls, "setting_names", cls._param_names)())
    settings = {k: v for k, v in (synthetic.settings or {}).items() if k in params}
    if "progressbar" in params:
        settings["progressbar"] = False
    setting = settings.get("random_seed")
    if "random_seed" in params and not isinstance(setting, (int, list)):
        # e.g. "<numpy.random.Generator>": not replayable, and fit is given its own seed below
        setting = settings["random_seed"] = None
    model = cls.from_settings(settings)
    records: Any = call.get("records")
    if records is None and synthetic.synthesized_records is not None:
        records = np.asarray(synthetic.synthesized_records, dtype=bool)
    if setting is not None:
        # the fit's seed is the recorded one (a release made before SEED_CONFLICT may record a
        # fit seed other than the setting); the setting is put back after the fit
        model.set_params(random_seed=None)
    model.fit(
        original,
        schema=synthetic.schema,
        synthesized=list(call["synthesized"]),
        records=records,
        random_seed=call["random_seed"],
    )
    if setting is not None:
        model.set_params(random_seed=setting)
    if verify:
        again = model.synthesize(synthetic.m, random_seed=synthetic.random_seed)
        for li, (a, b) in enumerate(zip(again, synthetic, strict=True)):
            a = a.reset_index(drop=True)
            b = b.reset_index(drop=True)
            same = list(a.columns) == list(b.columns) and all(
                _same_cells(a[c], b[c]) for c in a.columns
            )
            if not same:
                raise ValidationError(
                    f"the synthesizer rebuilt from the release's manifest does not reproduce "
                    f"synthetic dataset {li + 1}: original is not the table the release was "
                    "made from, or the release was modified after synthesis.",
                    code="RELEASE_NOT_REPRODUCED",
                )
    return model
