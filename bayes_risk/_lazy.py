"""Names of a package imported on first use (PEP 562), for the packages whose users should not
pay for every submodule (``bayes_risk.results``, ``bayes_risk.identification``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def attach(package: str, names: Mapping[str, str],
           public: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping of str to str
        Each lazily imported name and the module that defines it.
    public : sequence of str
        The package's ``__all__`` (listed by ``dir()`` before first use).
    """
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
            setattr(module, name, value)  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(public))

    return __getattr__, __dir__
