"""The converter of every grouped argument (``match=``, ``estimator=``, ``settings=`` ...) to
its spec class, and the field checks the spec classes share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

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


def check_int(value: Any, what: str, minimum: int) -> int:
    """``value`` as an int; a ValidationError naming ``what`` unless an integer >= ``minimum``."""
    if not is_integer(value) or value < minimum:
        raise ValidationError(f"{what} must be an integer >= {minimum}. Got {value!r}.")
    return int(value)


def check_flag(value: Any, what: str) -> bool:
    """``value`` as a bool; a ValidationError naming ``what`` unless True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValidationError(f"{what} must be True or False. Got {value!r}.")
    return bool(value)


def check_option(value: Any, what: str, options: Sequence[Any], *, one_of: bool = False) -> Any:
    """``value``; a ValidationError naming ``what`` and listing ``options`` unless among them
    (``one_of``: as "must be one of [...]", the utility measures' wording)."""
    if value not in options:
        *head, last = map(repr, options)
        listed = f"{', '.join(head)} or {last}" if head else last
        raise ValidationError(f"{what} must be {f'one of {list(options)}' if one_of else listed}. "
                              f"Got {value!r}.")
    return value


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
