"""Base class of every synthesizer and the protocol the risk engines use.

Estimator contract (scikit-learn style, STYLE.md R4): ``__init__`` stores settings unchanged;
``fit`` validates, learns, sets attributes with a trailing underscore and returns ``self``;
``synthesize(m, random_seed)`` returns :class:`~bayes_risk.data.SyntheticData`; calling it
before ``fit`` raises :class:`~bayes_risk.exceptions.NotFittedError`.

Bayesian models (DPMPM, Poisson mixtures, sequential regressions) additionally implement the
likelihood protocol :class:`bayes_risk.protocols.SupportsRecordLoglik` used by the attribute-risk
engine, and ``save``/``load`` (NetCDF posterior + JSON settings; no pickle).
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

from bayes_risk.exceptions import NotFittedError, ValidationError

__all__ = ["BaseSynthesizer", "check_is_fitted", "load_model", "SETTINGS_FILE"]

SETTINGS_FILE = "model.json"


class BaseSynthesizer:
    """Shared machinery: ``get_params`` / ``set_params`` from the ``__init__`` signature."""

    #: name under which the class is registered in :func:`bayes_risk.models.get_synthesizer`
    method_name: str = "base"

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self) -> dict[str, Any]:
        """Settings passed to ``__init__`` (JSON-serialisable for the built-in models)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> BaseSynthesizer:
        """Change settings; unknown names raise :class:`ValidationError`."""
        valid = self._param_names()
        for k, v in params.items():
            if k not in valid:
                raise ValidationError(
                    f"{type(self).__name__} has no setting {k!r}; valid settings are {valid}."
                )
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def check_is_fitted(model: Any, attribute: str | None = None) -> None:
    """Raise :class:`NotFittedError` unless ``model`` has been fitted.

    A model counts as fitted when it has any attribute ending in ``_`` set by ``fit`` (or the
    named ``attribute``).
    """
    if attribute is not None:
        fitted = getattr(model, attribute, None) is not None
    else:
        fitted = any(
            k.endswith("_") and not k.startswith("__") and v is not None
            for k, v in vars(model).items()
        )
    if not fitted:
        raise NotFittedError(
            f"This {type(model).__name__} instance is not fitted yet. Call 'fit' with "
            "appropriate arguments before using it."
        )


def load_model(path: str | os.PathLike[str]) -> Any:
    """Load a fitted model saved with its ``save(path)`` method.

    The folder's ``model.json`` names the class (its registry name under ``"method"``); the class's
    own ``load`` reads the rest (e.g. the NetCDF posterior).

    Raises
    ------
    ValidationError
        If the folder is not a saved model.
    """
    from bayes_risk.models import get_synthesizer

    p = Path(path)
    f = p / SETTINGS_FILE
    if not f.is_file():
        raise ValidationError(
            f"{str(p)!r} is not a saved bayes-risk model: {SETTINGS_FILE} not found."
        )
    try:
        meta = json.loads(f.read_text())
    except json.JSONDecodeError as err:
        raise ValidationError(f"{f} is not valid JSON: {err}") from err
    method = meta.get("method")
    cls = get_synthesizer(method)
    if not hasattr(cls, "load"):
        raise ValidationError(f"models of type {method!r} cannot be loaded from disk.")
    return cls.load(p)
