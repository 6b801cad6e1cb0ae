"""The converter of every grouped argument (``match=``, ``estimator=``, ``settings=`` ...) to
its spec class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bayes_risk.exceptions import ValidationError


def as_spec[S](value: Any, cls: type[S], name: str, field: str | None = None,
               allowed: Sequence[str] | None = None) -> S:
    """``name=`` as a ``cls``: ``None`` gives the defaults; where ``field`` is given, a string
    sets that field (checked against ``allowed`` here so that the error names ``name``)."""
    if value is None:
        return cls()
    if field is not None and isinstance(value, str):
        if allowed is not None and value not in allowed:
            raise ValidationError(f"{name} must be one of {list(allowed)} or {_a(cls)}. "
                                  f"Got {value!r}.")
        return cls(**{field: value})
    if not isinstance(value, cls):
        strings = (f" or one of {list(allowed)}" if allowed
                   else f" or its {field} (a string)" if field else "")
        raise ValidationError(f"{name} must be {_a(cls)}{strings}. Got {type(value).__name__}.")
    return value


def _a(cls: type) -> str:
    """'an OverlapSpec (bayes_risk.OverlapSpec(...))': ``cls`` with its article and maker."""
    article = "an" if cls.__name__[0] in "AEIOU" else "a"
    return f"{article} {cls.__name__} (bayes_risk.{cls.__name__}(...))"
