"""The release board's thresholds of the verdict lines (:class:`Thresholds`): the value of every
registered measure's :class:`~bayes_risk.measures.Threshold` (``Measure.thresholds``), each
checked against the range of its quantity (:doc:`/user_guide/audit`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bayes_risk._constraints import check_keywords
from bayes_risk._thresholds import Threshold, builtin_thresholds
from bayes_risk.exceptions import ValidationError

# THRESHOLD_SOURCES: read off the registered measures when asked (module __getattr__)
__all__ = ["THRESHOLD_SOURCES", "Thresholds", "threshold_records"]  # noqa: F822


def threshold_records() -> dict[str, Threshold]:
    """Every registered measure's thresholds by name, in the measures' order
    (:func:`bayes_risk.measures.measures`, which refuses one name declared twice)."""
    from bayes_risk.measures import measures

    return {t.name: t for m in measures() for t in m.thresholds}


def _parameters() -> str:
    """The Parameters section of :class:`Thresholds`: the package's measures' thresholds."""
    return "\n".join(f"    {t.name} : float\n        {t.doc}" for t in builtin_thresholds())


class Thresholds(Mapping[str, float]):
    __doc__ = f"""Release-board thresholds of the verdict lines: conventions, not findings
    (each one's source: ``THRESHOLD_SOURCES``); percentages in percent, rates as fractions.

    One value for each threshold of every registered measure (``Measure.thresholds``; a
    measure of another package adds its own), the ones not given at their defaults; read by
    name (``thresholds.repU``, ``thresholds["repU"]``). Immutable: :meth:`replace` gives
    thresholds with some changed.

    Each threshold lies inside the range of its quantity, in the quantity's unit: one at or
    past the end a line can reach (``singling_out_risk=5`` for a risk of at most 1) would keep
    the line within it whatever the release, so it is refused.

    Parameters
    ----------
{_parameters()}

    Raises
    ------
    ValidationError
        A name no registered measure declares, or a threshold that is not a number inside its
        quantity's range (``INVALID_ARGUMENT``).
    """

    __slots__ = ("_values",)

    def __init__(self, **values: float) -> None:
        records = threshold_records()
        check_keywords(values, records, "thresholds")
        object.__setattr__(self, "_values", {name: t.check(values.get(name, t.default))
                                             for name, t in records.items()})

    def __getattr__(self, name: str) -> float:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no threshold {name!r}; the thresholds are "
                                 f"{', '.join(self._values)}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Thresholds are immutable; use .replace({name}=...).")

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thresholds) and self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        return f"Thresholds({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restored, (dict(self._values),))

    def replace(self, **values: float) -> Thresholds:
        """These thresholds with those given changed (checked as the constructor checks)."""
        return type(self)(**{**self._values, **values})

    @classmethod
    def parse(cls, items: Mapping[str, float] | Sequence[str] | None) -> Thresholds:
        """Thresholds from ``{"repU": 2}`` or ``["repU=2", ...]`` (the others keep defaults).

        Raises
        ------
        ValidationError
            For an unknown name, or a value that is not a number inside its quantity's range.
        """
        if items is None:
            return cls()
        if isinstance(items, cls):
            return items
        if isinstance(items, Mapping):
            return cls(**dict(items))
        kw: dict[str, Any] = {}
        for it in items:
            if "=" not in str(it):
                raise ValidationError(f"thresholds: expected NAME=VALUE. Got {it!r}.",
                                      code="INVALID_ARGUMENT")
            k, v = str(it).split("=", 1)
            kw[k.strip()] = v.strip()
        return cls(**kw)

    def to_dict(self) -> dict[str, float]:
        """The thresholds by name."""
        return dict(self._values)


def _restored(values: dict[str, float]) -> Thresholds:
    """Thresholds of checked ``values`` (a copy's), whichever measures are registered now."""
    out = object.__new__(Thresholds)
    object.__setattr__(out, "_values", dict(values))
    return out


def __getattr__(name: str) -> Any:
    # where each default comes from (printed under the verdict table): read off the registered
    # measures' records when asked, so that a measure registered later is listed
    if name == "THRESHOLD_SOURCES":
        return {k: t.source for k, t in threshold_records().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
