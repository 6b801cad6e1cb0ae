"""The base of every result (:doc:`/user_guide/results`)."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, ClassVar

import pandas as pd

from bayes_risk._constraints import Options, check_value
from bayes_risk._io import to_jsonable
from bayes_risk.exceptions import ValidationError
from bayes_risk.results._summary import SHORT_ROWS, ResultWarning, Summary
from bayes_risk.warning_codes import message

__all__ = ["RiskResult", "legend_below", "own_figure", "plot_figure", "pyplot_axes"]


def legend_below(ax: Any, ncols: int = 3, warning: str = "") -> Any:
    """The axes' legend below the axes, ``warning`` above its entries (``None``: no labels),
    in as many columns as fit the figure's width (issue 66: three entries side by side ran
    past a 6-inch figure, its last one cut off in the report)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    cols = min(ncols, len(handles))
    while True:
        leg = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                        borderaxespad=3.3, ncols=cols, frameon=False,
                        fontsize="medium", title=f"⚠ {warning}" if warning else None,
                        title_fontsize="medium")
        if cols == 1 or leg.get_window_extent().width <= 0.96 * ax.figure.bbox.width:
            break
        cols -= 1
    if warning:
        leg.get_title().set_color("#8a5300")
    return leg


#: the attribute :func:`draws` sets on a method: the plot kind it draws
_KIND = "_draws_plot_kind"


def draws[F: Callable[..., Any]](kind: str) -> Callable[[F], F]:
    """Mark a method of a result as the one drawing the plot ``kind`` (:meth:`RiskResult.plot`
    calls it with the Axes and the kind's options)."""

    def mark(fn: F) -> F:
        setattr(fn, _KIND, kind)
        return fn

    return mark


class RiskResult(metaclass=ABCMeta):
    """Base class of the results of bayes-risk's measures (:doc:`/user_guide/results`)."""

    #: the kinds ``plot`` draws; the first is the default
    plot_kinds: ClassVar[tuple[str, ...]] = ()
    #: kind -> the method drawing it: the methods marked with :func:`draws`, a subclass's
    #: replacing its bases' (collected when the class is made)
    _drawers: ClassVar[dict[str, Callable[..., Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._drawers = {getattr(fn, _KIND): fn for klass in reversed(cls.__mro__)
                        for fn in vars(klass).values() if hasattr(fn, _KIND)}
        missing = [k for k in cls.plot_kinds if k not in cls._drawers]
        if missing:  # a programming error of the package, caught when it is imported
            raise TypeError(f"{cls.__name__}.plot_kinds {missing} have no method marked "
                            "@draws(kind).")

    @abstractmethod
    def summary(self) -> Summary:
        """Printable summary (see :class:`~bayes_risk.results.Summary`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary of the result (``inf`` → ``"inf"``, ``nan`` → ``None``)."""
        return to_jsonable(asdict(self))

    @abstractmethod
    def to_dataframe(self) -> pd.DataFrame:
        """The result's main table."""

    def _warning_codes(self) -> list[str]:
        return [str(c) for c in getattr(self, "warnings", ()) or ()]

    def _flag_counts(self) -> dict[str, int]:
        """``{code: rows}`` of the ``;``-joined ``flag_codes`` of :attr:`records`."""
        return dict(Counter(c for f in self.records["flag_codes"] for c in str(f).split(";") if c))

    def _flag_warnings(self, what: str) -> list[ResultWarning]:
        """One warning per row flag, ``where``: how many ``what`` and the first five."""
        out, recs = [], self.records
        for c, n in self._flag_counts().items():
            ids = recs.index[recs["flag_codes"].str.split(";").map(lambda f, c=c: c in f)]
            first = ", ".join(str(int(r)) for r in ids[:5]) + (", …" if n > 5 else "")
            out.append(ResultWarning(c, self._message(c), f"{n} {what}: {first}"))
        return out

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """The result's warnings with their meaning and what they concern."""
        return [ResultWarning(c, self._message(c)) for c in self._warning_codes()]

    def _message(self, code: str) -> str:
        """What ``code`` means: the result's ``warning_details``, else the code's message."""
        return (getattr(self, "warning_details", None) or {}).get(code) or message(code)

    def plot(self, kind: str | None = None, *, ax: Any = None, **kwargs: Any) -> Any:
        """Draw one kind of plot of the result on a matplotlib Axes and return the Axes.

        Parameters
        ----------
        kind : str, optional
            One of :attr:`plot_kinds` (default: the first).
        ax : matplotlib.axes.Axes, optional
            The Axes to draw on (default: ``plt.gca()``, or a new figure when none is open).
        **kwargs
            Options of the kind; ``figsize=(w, h)`` without ``ax`` draws on a new figure.

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        ValidationError
            For a kind the result does not draw.
        """
        kinds = type(self).plot_kinds
        if not kinds:
            raise ValidationError(f"{type(self).__name__} has no plot.", code="RESULT_UNSUITED")
        kind = kinds[0] if kind is None else kind
        check_value(kind, Options(tuple(kinds)), f"kind of {type(self).__name__}.plot")
        figsize = kwargs.pop("figsize", None)
        if ax is None:
            ax = pyplot_axes(figsize or self._figsize(kind), new=figsize is not None)
        type(self)._drawers[kind](self, ax, **kwargs)
        if own_figure(ax):
            self._layout(ax.figure)
        return ax

    def _layout(self, fig: Any) -> None:
        """Lay out a figure that holds the plot alone."""
        fig.tight_layout()

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (6.0, 4.0)

    def _repr_html_(self) -> str:
        return self.summary().as_html(max_rows=SHORT_ROWS)

    def __str__(self) -> str:
        """The summary within 100 columns, :data:`SHORT_ROWS` rows of each table (where the
        rest is named): as statsmodels' and ArviZ's summaries print."""
        return self.summary().as_text(max_rows=SHORT_ROWS)

    # the result shown at a Python prompt is that summary too, as pandas and ArviZ show
    # theirs (the classes are dataclasses with ``repr=False``: not every field's value)
    __repr__ = __str__


def pyplot_axes(figsize: tuple[float, float], *, new: bool = False) -> Any:
    """pyplot's current Axes, or a new figure's of ``figsize`` when none is open (or ``new``)."""
    import matplotlib.pyplot as plt

    if new or not plt.get_fignums():
        return plt.figure(figsize=figsize).add_subplot()
    return plt.gca()


def own_figure(ax: Any) -> bool:
    """Whether ``ax`` is alone in a figure with no layout engine (the plot may lay it out)."""
    fig = ax.figure
    return len(fig.axes) == 1 and fig.get_layout_engine() is None


def plot_figure(result: RiskResult, kind: str | None = None, **kwargs: Any) -> Any:
    """``result.plot(kind)`` on a figure made without pyplot; returns the Figure."""
    from matplotlib.figure import Figure

    kind = kind or type(result).plot_kinds[0]
    fig = Figure(figsize=kwargs.pop("figsize", None) or result._figsize(kind))
    result.plot(kind, ax=fig.add_subplot(), **kwargs)
    return fig
