"""A synthpop release as R saved it: the ``syn()`` object (class ``synds``) in an ``.rds`` file
(``saveRDS``) or an ``.RData``/``.rda`` file (``save``), read with ``rdata`` (a pure-Python
reader of R's serialisation). See :doc:`/user_guide/data`, synthpop objects.
"""

from __future__ import annotations

import os

from bayes_risk.data.synthetic import SyntheticData
from bayes_risk.data.synthpop_objects import R_SUFFIXES, read_syn_object

__all__ = ["R_SUFFIXES", "read_synthpop"]


def read_synthpop(path: str | os.PathLike[str], *,
                  object_name: str | None = None) -> SyntheticData:
    """The datasets and the synthesis specification of a synthpop ``syn()`` object saved in R.

    Parameters
    ----------
    path : path
        An ``.rds`` file (``saveRDS(syn_object, path)``) or an ``.RData``/``.rda`` file
        (``save(syn_object, file = path)``).
    object_name : str, optional
        The object to read from an ``.RData`` file holding several ``syn()`` objects.

    Returns
    -------
    SyntheticData
        The ``m`` datasets (``syn``; factors as their levels' values), with ``method="synthpop"``
        and ``settings``: ``methods`` (per column, ``""`` for a column not synthesized),
        ``visit_sequence``, ``predictor_matrix`` (``{column: [its predictors]}``), ``m``,
        ``proper``, ``seed``, ``cont_na`` (declared missing-value codes); ``extra["file"]``.
        Its ``synthesized_columns`` (``extra``) are the visited columns with a method, the
        roles the measures use (the schema's; R's factors are its categorical columns).

    Raises
    ------
    ValidationError
        ``NOT_SYNTHPOP``: the file holds no object of class ``synds``, or not one alone;
        ``FILE_UNREADABLE``: not an R file rdata can read.

    Examples
    --------
    >>> read_synthpop("release.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: 'release.csv' is not an R file; expected a name ...
    """
    return SyntheticData(**read_syn_object(path, object_name=object_name))
