"""The base of every result: ``summary()``, ``to_dict()``, ``to_dataframe()``, ``plot(kind=)``
and structured warnings."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any, ClassVar

import pandas as pd

from bayes_risk.exceptions import ValidationError
from bayes_risk.results._summary import ResultWarning, Summary
from bayes_risk.warning_codes import message

__all__ = ["RiskResult", "legend_below"]


def legend_below(ax: Any, ncols: int = 3, warning: str = "") -> Any:
    """The axes' legend under the axes, off the data (below the tick labels and the x label:
    the offset is in font sizes, so it holds whatever the figure's height); ``None`` when
    nothing is labelled. ``warning``: a line above the entries, in the colour of a warning
    (what questions the figure is said beside it, not in its title)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    leg = ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                    borderaxespad=3.3, ncols=min(ncols, len(handles)), frameon=False,
                    fontsize="medium", title=f"⚠ {warning}" if warning else None,
                    title_fontsize="medium")
    if warning:
        leg.get_title().set_color("#8a5300")
    return leg


class RiskResult(metaclass=ABCMeta):
    """Base class of the results of bayes-risk's measures.

    Every result

    * ``summary()`` — a :class:`~bayes_risk.results.Summary` (printable as text, Markdown, HTML;
      a notebook shows it);
    * ``to_dict()`` — a JSON-safe dict (what the command line writes to ``summary.json``);
    * ``to_dataframe()`` — its main table as a DataFrame;
    * ``plot(kind=...)`` — a matplotlib figure of one of :attr:`plot_kinds` (matplotlib is
      imported only here);
    * ``structured_warnings`` — its warning codes as :class:`~bayes_risk.results.ResultWarning`
      objects (code, message, where); ``warnings`` keeps the codes.

    ``print(result)`` prints the summary.
    """

    #: the kinds ``plot`` draws; the first is the default
    plot_kinds: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def summary(self) -> Summary:
        """Printable summary (see :class:`~bayes_risk.results.Summary`)."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dictionary of the result."""

    @abstractmethod
    def to_dataframe(self) -> pd.DataFrame:
        """The result's main table."""

    def _warning_codes(self) -> list[str]:
        return [str(c) for c in getattr(self, "warnings", ()) or ()]

    @property
    def structured_warnings(self) -> list[ResultWarning]:
        """The result's warnings with their meaning and what they concern."""
        return [ResultWarning(c, message(c)) for c in self._warning_codes()]

    def plot(self, kind: str | None = None, *, ax: Any = None, **kwargs: Any) -> Any:
        """Draw one kind of plot of the result.

        Parameters
        ----------
        kind : str, optional
            One of :attr:`plot_kinds` (default: the first).
        ax : matplotlib.axes.Axes, optional
            Draw into these axes; by default a new figure is made (without pyplot, so nothing
            stays open and no backend is chosen).
        **kwargs
            Options of the kind (see the subclass).

        Returns
        -------
        matplotlib.figure.Figure
            The figure drawn into (``ax.figure`` when ``ax`` is given); ``fig.savefig(path)``
            writes it.

        Raises
        ------
        ValidationError
            For a kind the result does not draw.
        """
        kinds = type(self).plot_kinds
        if not kinds:
            raise ValidationError(f"{type(self).__name__} has no plot.", code="RESULT_UNSUITED")
        kind = kinds[0] if kind is None else kind
        if kind not in kinds:
            raise ValidationError(
                f"kind of {type(self).__name__}.plot must be one of {list(kinds)}. Got {kind!r}."
            )
        figsize = kwargs.pop("figsize", None) or self._figsize(kind)
        return getattr(self, "_plot_" + kind)(_axes(ax, figsize), **kwargs)

    def _figsize(self, kind: str) -> tuple[float, float]:
        return (6.0, 4.0)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def __str__(self) -> str:
        return self.summary().as_text()


def _axes(ax: Any, figsize: tuple[float, float]) -> Any:
    """``ax``, or the axes of a new figure made without pyplot."""
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig.add_subplot()
