"""The model function of :class:`~bayes_risk.models.PyMCSynthesizer`, named by an importable
path ``"module:function"`` (as entry points name objects): a saved model records the path, never
the function itself (no pickle)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from bayes_risk._constraints import InstanceOf, Text, check_value
from bayes_risk.exceptions import ValidationError

__all__ = ["approve_function", "function_path", "importable_path", "resolve_function"]

_HOW = ("a function in an importable module (installed, or its folder on PYTHONPATH), named "
        "'module:function', e.g. 'my_models:income_model'")
#: 'module:function', each a dotted name of identifiers
_PATH = r"[^\W\d]\w*(\.[^\W\d]\w*)*:[^\W\d]\w*(\.[^\W\d]\w*)*"


def resolve_function(model_function: Any) -> Callable[..., Any]:
    """The function ``model_function`` names (a callable is returned as it is).

    Raises
    ------
    ValidationError
        ``MODEL_FUNCTION_UNAVAILABLE`` when the path is malformed, its module cannot be imported
        or has no such callable.
    """
    if callable(model_function):
        return model_function
    if model_function is None:
        raise ValidationError(
            f"model_function is required: {_HOW}, that takes the table and returns a "
            "pymc.Model (docs: user guide, Your own PyMC model).")
    text = check_value(model_function, Text(f"{_HOW}, or the function itself", _PATH),
                       "model_function", code="MODEL_FUNCTION_UNAVAILABLE")
    module, _, name = text.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as err:
        raise ValidationError(
            f"model_function {text!r}: module {module!r} cannot be imported ({err}). It must "
            f"be {_HOW}.", code="MODEL_FUNCTION_UNAVAILABLE") from err
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ValidationError(
                f"model_function {text!r}: module {module!r} has no {name!r}.",
                code="MODEL_FUNCTION_UNAVAILABLE")
    if not callable(obj):
        raise ValidationError(
            f"model_function {text!r} names a {type(obj).__name__}, not a function.",
            code="MODEL_FUNCTION_UNAVAILABLE")
    return obj


def approve_function(given: Any, saved: Any, folder: Any) -> Any:
    """The model function a saved model's folder is loaded with: ``given``, the one the user
    names, once it is the one the folder names (``saved``, ``model.json``'s
    ``settings.model_function``). Nothing is imported here: a path is compared as text, a
    function by :func:`function_path`.

    A model folder is data: loading it never imports a module that the folder alone names,
    since importing a module runs its code and the folder's checksum detects damage, not
    tampering (anyone can write a folder and its checksums) — :doc:`/user_guide/security`.

    Raises
    ------
    ValidationError
        ``MODEL_FUNCTION_REQUIRED`` without ``given``; ``MODEL_FUNCTION_MISMATCH`` when it is
        not the function the folder names.
    """
    from bayes_risk.exceptions import arg_name

    named = saved if isinstance(saved, str) else repr(saved)
    if given is None:
        raise ValidationError(
            f"the model folder {str(folder)!r} is a PyMC model whose model.json names the model "
            f"function {named!r}: loading it imports that module and calls the function with "
            "your data, so it runs only when you name it (a model folder is data, and its "
            "checksums detect damage, not tampering). Once you have checked that this is the "
            "function you fitted the model with, and that the module is one you trust, give "
            f"{arg_name('model_function', repr(named), cli=named)}.",
            code="MODEL_FUNCTION_REQUIRED")
    check_value(given, [InstanceOf(str, "'module:function'"),
                        InstanceOf(Callable, "the function itself")], "model_function",
                code="MODEL_FUNCTION_UNAVAILABLE")
    if function_path(given) != saved:
        raise ValidationError(
            f"model_function {function_path(given)!r} is not the model function the model "
            f"folder {str(folder)!r} names ({named!r}, in its model.json): the folder's draws "
            "belong to that function. Give the function the model was fitted with, or fit the "
            "model again with yours.", code="MODEL_FUNCTION_MISMATCH")
    return given


def function_path(model_function: Any) -> str:
    """``"module:qualname"`` of a function (a path is returned as it is); for the record."""
    if isinstance(model_function, str) or model_function is None:
        return str(model_function)
    module = getattr(model_function, "__module__", None) or "?"
    name = getattr(model_function, "__qualname__", None) or type(model_function).__name__
    return f"{module}:{name}"


def importable_path(model_function: Any) -> str:
    """The path that imports back to ``model_function`` (what a saved model records).

    Raises
    ------
    ValidationError
        ``MODEL_FUNCTION_NOT_IMPORTABLE`` for a function another process cannot import: a
        lambda, a function defined inside another, or one of ``__main__`` (a script or a
        notebook).
    """
    path = function_path(model_function)
    if isinstance(model_function, str):
        resolve_function(model_function)
        return path
    module, _, name = path.partition(":")
    reason = ("it is defined in __main__ (a script or a notebook)" if module == "__main__"
              else "it is a lambda or is defined inside another function"
              if "<" in name else "")
    if not reason:
        try:
            back = resolve_function(path)
        except ValidationError as err:
            back, reason = None, str(err)
        if back is not None and back is not model_function:
            reason = f"{path!r} imports another object"
    if reason:
        raise ValidationError(
            f"model_function {path!r} cannot be saved by its path: {reason}. A saved model "
            f"names its model function, so it must be {_HOW}.",
            code="MODEL_FUNCTION_NOT_IMPORTABLE")
    return path
