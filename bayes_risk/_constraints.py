"""The constraint table of the plain type and range checks (scikit-learn's
``utils._param_validation`` is the model): a field or argument states what it takes --
:class:`Interval`, :class:`Options`, :class:`Flag`, :class:`InstanceOf`, :class:`Text`,
:class:`HasMethods`, :class:`SequenceOf`, ``None`` -- and one checker (:func:`check_value`) refuses
anything else with the package's error, naming the argument, the value and what was expected.

A spec dataclass declares its checks in its fields' metadata (:func:`checked`) and calls
:func:`check_fields` in ``__post_init__``, so every spec raises ``ValidationError`` naming the
field (the API reference says so once; a spec's docstring lists in ``Raises`` only what else it
refuses); a function with many scalar arguments checks a dict of them (:func:`check_params`). A
check whose message gives advice beyond "expected X" stays hand-written.

Relations between arguments (:class:`Requires`, :class:`OneOf`, :class:`AtMost`, :class:`Within`)
are declared beside the table -- a spec's class attribute ``RELATIONS``, a function's tuple given
to :func:`check_params` -- and checked by the same step, after each argument, as pydantic's model
validators check a model after its fields.

Imports only the standard library at module level: the command line builds its parsers from the
spec classes (``bayes-risk --help`` imports no numpy).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from bayes_risk.exceptions import ValidationError, arg_name

__all__ = ["Interval", "Options", "Flag", "InstanceOf", "Text", "HasMethods", "SequenceOf",
           "COLUMN_NAMES", "Constraint", "Requires", "OneOf", "AtMost", "Within", "Relation",
           "checked", "check_value", "check_vector", "check_params", "check_fields",
           "check_keywords", "check_relations"]


@dataclass(frozen=True)
class Flag:
    """``True`` or ``False`` (numpy's bool included; not ``0`` or ``1``), as a Python bool."""

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is a bool."""
        # numpy is not imported here (the command line's parsers read the specs)
        kind = type(value)
        return isinstance(value, bool) or (kind.__module__ == "numpy"
                                           and kind.__name__ in ("bool", "bool_"))

    def describe(self) -> str:
        """'True or False'."""
        return "True or False"


_FLAG = Flag()


@dataclass(frozen=True)
class Interval:
    """Integers (``kind=int``) or finite real numbers (``kind=float``) between ``left`` and
    ``right`` (``None``: unbounded on that side); ``closed`` says which bounds are taken.

    A bool is neither; NaN and infinities are refused; numpy scalars are taken. The checked
    value is a Python ``int`` or ``float``.

    Examples
    --------
    >>> Interval(int, 1).describe()
    'an integer >= 1'
    >>> Interval(float, 0, 1, closed="neither").describe()
    'a number in (0, 1)'
    """

    kind: type
    left: float | None = None
    right: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"

    def __post_init__(self) -> None:
        if self.kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, not {self.kind!r}")

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` lies in the interval."""
        if _FLAG.accepts(value):  # a bool is an int, no number here
            return False
        if self.kind is int:
            if not isinstance(value, numbers.Integral):
                return False
        elif not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            return False
        low_ok = self.closed in ("both", "left")
        high_ok = self.closed in ("both", "right")
        if self.left is not None and not (value >= self.left if low_ok else value > self.left):
            return False
        return self.right is None or (value <= self.right if high_ok else value < self.right)

    def describe(self) -> str:
        """What the interval takes, as the error says it."""
        noun = "an integer" if self.kind is int else "a number"
        if self.left is None and self.right is None:
            return noun if self.kind is int else "a finite number"
        if self.right is None:
            sign = ">=" if self.closed in ("both", "left") else ">"
            finite = "" if self.kind is int else "finite "
            return f"{noun.replace('a ', 'a ' + finite, 1)} {sign} {self.left:g}"
        if self.left is None:
            sign = "<=" if self.closed in ("both", "right") else "<"
            return f"{noun} {sign} {self.right:g}"
        opening = "[" if self.closed in ("both", "left") else "("
        closing = "]" if self.closed in ("both", "right") else ")"
        return f"{noun} in {opening}{self.left:g}, {self.right:g}{closing}"


@dataclass(frozen=True)
class Options:
    """One of ``values`` (compared with ``==``; ``None`` may be one of them).

    ``listed``: the error lists them as "'a', 'b' or 'c'" (else as "one of ['a', 'b']").

    Examples
    --------
    >>> Options(("logit", "cart")).describe()
    "one of ['logit', 'cart']"
    >>> Options(("material", "any"), listed=True).describe()
    "'material' or 'any'"
    """

    values: tuple[Any, ...]
    listed: bool = False

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is one of the options."""
        try:
            return value in self.values
        except (TypeError, ValueError):  # an array compared element-wise
            return False

    def describe(self) -> str:
        """What the options are, as the error says it."""
        if not self.listed:
            return f"one of {list(self.values)}"
        return _either([repr(v) for v in self.values])


@dataclass(frozen=True)
class InstanceOf:
    """An instance of ``types``, described as ``what`` ("a string", "a mapping")."""

    types: type | tuple[type, ...]
    what: str

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is an instance of ``types``."""
        return isinstance(value, self.types)

    def describe(self) -> str:
        """``what``."""
        return self.what


@dataclass(frozen=True)
class Text:
    """A string holding more than white space, described as ``what``; ``pattern``: a regular
    expression the whole string matches.

    Examples
    --------
    >>> Text("a column name").accepts(" ")
    False
    >>> Text("a name", "[A-Za-z_][A-Za-z0-9_]*").accepts("2x")
    False
    """

    what: str
    pattern: str | None = None

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is such a string."""
        return isinstance(value, str) and bool(value.strip()) and (
            self.pattern is None or re.fullmatch(self.pattern, value) is not None)

    def describe(self) -> str:
        """``what``."""
        return self.what


@dataclass(frozen=True)
class HasMethods:
    """An object with the callable attributes ``methods``, described as ``what`` (scikit-learn's
    ``HasMethods``: a model is known by what it does, not by its class).

    Examples
    --------
    >>> HasMethods(("fit", "synthesize"), "a synthesizer").accepts(object())
    False
    """

    methods: tuple[str, ...]
    what: str

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` has every method of ``methods``."""
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def describe(self) -> str:
        """``what``."""
        return self.what


@dataclass(frozen=True)
class SequenceOf:
    """A sequence -- a list, tuple, range, or a one-dimensional array, index or series; never a
    string nor a mapping -- of ``min_len`` to ``max_len`` items (``None``: no upper bound),
    each meeting ``item``; ``unique``: no item twice. ``what`` names the items, plural
    ("column names", "finite numbers >= 0").

    The checked value is the one given (a tuple stays a tuple).

    Examples
    --------
    >>> SequenceOf(InstanceOf(str, "a column name"), "column names").describe()
    'a non-empty sequence of column names'
    >>> SequenceOf(Interval(float, 0), "radii", min_len=0, unique=True).describe()
    'a sequence of radii, each listed once'
    >>> SequenceOf(Interval(float, 0, closed="neither"), "numbers > 0", min_len=2,
    ...            max_len=2).describe()
    'a sequence of 2 numbers > 0'
    >>> SequenceOf(InstanceOf(str, "a name"), "names").accepts("Age")
    False
    """

    item: Interval | Options | Flag | InstanceOf | Text | HasMethods
    what: str
    min_len: int = 1
    max_len: int | None = None
    unique: bool = False

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is such a sequence."""
        # numpy and pandas are not imported here: an array is known by its one dimension
        one_dimensional = getattr(value, "ndim", None) == 1 and hasattr(value, "__iter__")
        if isinstance(value, (str, bytes, Mapping)) or not (
                isinstance(value, Sequence) or one_dimensional):
            return False
        items = list(value)
        if not self.min_len <= len(items) <= (len(items) if self.max_len is None
                                              else self.max_len):
            return False
        if not all(self.item.accepts(v) for v in items):
            return False
        try:  # a sequence item (a visit order) is compared by its items
            return not self.unique or len({tuple(v) if isinstance(v, list) or (
                getattr(v, "ndim", None) == 1) else v for v in items}) == len(items)
        except TypeError:  # an unhashable item is no name nor number
            return False

    def describe(self) -> str:
        """What the sequence holds, as the error says it."""
        low, high = self.min_len, self.max_len
        size = (f"a sequence of {low}" if low == high
                else f"a sequence of {low} to {high}" if high is not None
                else "a non-empty sequence of" if low == 1 else "a sequence of" if low == 0
                else f"a sequence of {low} or more")
        return f"{size} {self.what}" + (", each listed once" if self.unique else "")


#: the constraint of an argument naming columns
COLUMN_NAMES = SequenceOf(InstanceOf(str, "a column name"), "column names")

#: one constraint, or a list of them of which the value must meet one; ``None`` in the list
#: takes ``None`` (the error does not list it: a field left at ``None`` takes its default)
Constraint = (Interval | Options | Flag | InstanceOf | Text | HasMethods | SequenceOf
              | Sequence[Any])


def given(value: Any) -> bool:
    """Whether an argument is given: neither ``None`` nor ``False`` (an empty list is given:
    no known record is a set of known records)."""
    return value is not None and value is not False


def _name(name: str, owner: str, values: tuple[Any, ...] | None = None) -> str:
    """The argument ``owner`` + ``name`` as the caller writes it, with its values if any (a
    choice on the command line has hyphens; several name it once: ``--scenario a, b or c``)."""
    bare = arg_name(owner + name)
    shown = [arg_name(owner + name, repr(v), cli=v.replace("_", "-")) if isinstance(v, str)
             else arg_name(owner + name, v) for v in values or ()]
    if all(x.startswith(bare) and x[len(bare):len(bare) + 1] in (" ", "=") for x in shown):
        shown[1:] = [x[len(bare) + 1:] for x in shown[1:]]
    return _either(shown) if shown else bare


def _either(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` as ``"a, b or c"``."""
    return f"{', '.join(items[:-1])} or {items[-1]}" if len(items) > 1 else "".join(items)


def _names(value: Any) -> list[Any] | None:
    """The columns ``value`` names: itself (a name), its items or its keys (``None``: none)."""
    if isinstance(value, str):
        return [value]
    return list(value) if isinstance(value, (Sequence, Mapping)) else None


def _why(why: str) -> str:
    return f" ({why})" if why else ""


def _among(value: Any, values: tuple[Any, ...]) -> bool:
    try:
        return value in values
    except (TypeError, ValueError):  # an array compared element-wise
        return False


@dataclass(frozen=True)
class Requires:
    """``argument`` given (:func:`given`; with ``when``: one of those values) needs ``needs``
    given (one of them, if several; with ``equal``: one of those values).

    Examples
    --------
    >>> check_relations({"dashboard": True}, [Requires("dashboard", "workers")])
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: dashboard needs workers.
    """

    argument: str
    needs: str | tuple[str, ...]
    when: tuple[Any, ...] | None = None
    equal: tuple[Any, ...] | None = None
    why: str = ""
    code: str = "OPTION_CONFLICT"

    def names(self) -> tuple[str, ...]:
        """The arguments the relation reads."""
        return (self.argument, *((self.needs,) if isinstance(self.needs, str) else self.needs))

    def problem(self, get: Any, owner: str = "") -> str | None:
        """What is wrong with the values ``get(name)``, or ``None``."""
        first, *needs = self.names()
        if not (given(get(first)) if self.when is None else _among(get(first), self.when)) or any(
                given(get(n)) if self.equal is None else _among(get(n), self.equal)
                for n in needs):
            return None
        # a value other than those needed is shown, as a constraint shows it
        got = "" if self.equal is None else " Got " + " and ".join(
            _name(n, owner, (get(n),)) for n in needs) + "."
        return (f"{_name(first, owner, self.when)} needs "
                f"{_either([_name(n, owner, self.equal) for n in needs])}{_why(self.why)}.{got}")


@dataclass(frozen=True)
class OneOf:
    """At most one of ``arguments`` given; ``required``: exactly one; ``only=False``: at
    least one (the operations of a function that has nothing to do without one)."""

    arguments: tuple[str, ...]
    required: bool = False
    only: bool = True
    why: str = ""
    code: str = "OPTION_CONFLICT"

    def names(self) -> tuple[str, ...]:
        """The arguments the relation reads."""
        return self.arguments

    def problem(self, get: Any, owner: str = "") -> str | None:
        """What is wrong with the values ``get(name)``, or ``None``."""
        n = sum(given(get(a)) for a in self.arguments)
        if (n or not self.required) and (n <= 1 or not self.only):
            return None
        *head, last = (_name(a, owner) for a in self.arguments)
        if not self.only:
            return f"nothing to do: give {_either([*head, last])}{_why(self.why)}."
        listed = f"{', '.join(head)} and {last}"
        return (f"give exactly one of {listed}{_why(self.why)}." if self.required
                else f"{listed}: give one of them, not both{_why(self.why)}.")


@dataclass(frozen=True)
class AtMost:
    """``argument`` at most ``bound``, when both are given."""

    argument: str
    bound: str
    why: str = ""
    code: str = "INVALID_ARGUMENT"

    def names(self) -> tuple[str, ...]:
        """The arguments the relation reads."""
        return (self.argument, self.bound)

    def problem(self, get: Any, owner: str = "") -> str | None:
        """What is wrong with the values ``get(name)``, or ``None``."""
        a, b = get(self.argument), get(self.bound)
        if a is None or b is None or a <= b:
            return None
        name, bound = _name(self.argument, owner), _name(self.bound, owner)
        return f"{name} must be <= {bound}{_why(self.why)}. Got {name}={a!r} and {bound}={b!r}."


@dataclass(frozen=True)
class Within:
    """Every column ``argument`` names (a name, its items or its keys) is among those
    ``among`` names (``apart``: none is), when both are given."""

    argument: str
    among: str
    apart: bool = False
    why: str = ""
    code: str = "INVALID_ARGUMENT"

    def names(self) -> tuple[str, ...]:
        """The arguments the relation reads."""
        return (self.argument, self.among)

    def problem(self, get: Any, owner: str = "") -> str | None:
        """What is wrong with the values ``get(name)``, or ``None``."""
        names, among = _names(get(self.argument)), _names(get(self.among))
        bad = [c for c in names or () if among is not None and (c in among) == self.apart]
        if not bad:
            return None
        name, other = _name(self.argument, owner), _name(self.among, owner)
        if self.apart:
            why = self.why or "a column is one or the other"
            return f"{name} and {other} both name {bad}; {why}."
        return (f"{name} names {bad}, which {other} does not name (it names {among})"
                f"{_why(self.why)}.")


Relation = Requires | OneOf | AtMost | Within  #: a relation between arguments


def check_relations(values: Any, relations: Sequence[Relation], *, owner: str = "") -> None:
    """Nothing when every relation of ``relations`` holds between ``values`` (a mapping of the
    arguments, or an object holding them as attributes); else the first broken relation's
    ``ValidationError``, with its code, naming its arguments (``owner`` + name)."""
    get = values.get if isinstance(values, Mapping) else partial(getattr, values)
    for r in relations:
        problem = r.problem(get, owner)
        if problem is not None:
            raise ValidationError(problem, code=r.code)


def _alternatives(constraint: Constraint) -> tuple[list[Any], bool]:
    items = list(constraint) if isinstance(constraint, (list, tuple)) else [constraint]
    return [c for c in items if c is not None], None in items


def check_value(value: Any, constraint: Constraint, what: str, *,
                code: str | None = None) -> Any:
    """``value`` converted by the first alternative of ``constraint`` it meets.

    Parameters
    ----------
    value : object
        The argument's value.
    constraint : Interval, Options, Flag, InstanceOf, Text, HasMethods, SequenceOf or list of
        them and None
        What the argument takes.
    what : str
        The argument's name in the message (``"EstimatorSpec.bootstrap"``).
    code : str, optional
        The error code (default ``INVALID_ARGUMENT``).

    Returns
    -------
    object
        ``value``, an ``Interval``'s as a Python number and a ``Flag``'s as a Python bool.

    Raises
    ------
    ValidationError
        "``what`` must be <expected>. Got <value>." naming the alternatives (a value that is
        no scalar by the name of its type).

    Examples
    --------
    >>> check_value(3, Interval(int, 1), "draws")
    3
    >>> check_value(0, Interval(int, 1), "draws")
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: draws must be an integer >= 1. Got 0.
    """
    alternatives, none_ok = _alternatives(constraint)
    if value is None and none_ok:
        return None
    for c in alternatives:
        if c.accepts(value):
            # a number as a Python int or float, a flag as a Python bool
            return (c.kind(value) if isinstance(c, Interval)
                    else bool(value) if isinstance(c, Flag) else value)
    expected = " or ".join(c.describe() for c in alternatives)
    raise ValidationError(f"{what} must be {expected}. Got {_shown(value)}.", code=code)


def _shown(value: Any) -> str:
    """``value`` as the error shows it: a scalar's repr, or a list's or tuple's of scalars (cut
    at 60 characters), else the name of its type -- a data frame given for a schema is not
    printed whole."""
    def scalar(v: Any) -> bool:
        return v is None or isinstance(v, (str, bytes, numbers.Number)) or _FLAG.accepts(v)

    if not (scalar(value) or (isinstance(value, (list, tuple)) and all(map(scalar, value)))):
        return type(value).__name__
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def check_vector(value: Any, constraint: SequenceOf, what: str, *,
                 code: str | None = None) -> Any:
    """``value`` -- a number alone, or a sequence or array of them -- as a float64 vector
    checked by ``constraint`` (:func:`check_value`; the message shows the vector as a list).

    Examples
    --------
    >>> check_vector(2, SequenceOf(Interval(float, 0), "finite numbers >= 0"), "u").tolist()
    [2.0]
    >>> check_vector([[1.0]], SequenceOf(Interval(float), "numbers"), "q")
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: q must be a non-empty sequence of numbers. Got ndarray.
    """
    import numpy as np  # here: the command line's parsers import this module

    try:
        a = np.atleast_1d(np.asarray(value))
    except ValueError:  # a ragged nesting: refused as it is
        a = value
    shown = a.tolist() if isinstance(a, np.ndarray) and a.ndim == 1 else a
    return np.asarray(check_value(shown, constraint, what, code=code), dtype=np.float64)


def check_params(values: Any, constraints: Mapping[str, Constraint], *,
                 relations: Sequence[Relation] = (), owner: str = "",
                 code: str | None = None) -> dict[str, Any]:
    """The arguments named in ``constraints``, each checked (:func:`check_value`), by name;
    then ``relations`` between them (:func:`check_relations`, on the checked values).

    ``values`` is a mapping of them, or an object holding them as attributes (a model's
    settings); ``owner`` prefixes the names in the message (``"AttackSpec."``).
    """
    get = values.__getitem__ if isinstance(values, Mapping) else partial(getattr, values)
    out = {name: check_value(get(name), c, f"{owner}{name}", code=code)
           for name, c in constraints.items()}
    if relations:
        check_relations({**(values if isinstance(values, Mapping) else {
            n: getattr(values, n) for r in relations for n in r.names()}), **out},
            relations, owner=owner)
    return out


def check_keywords(given: Any, allowed: Any, owner: str) -> None:
    """Nothing when every name of ``given`` (the keywords a function passes on) is one of
    ``allowed``; else "unknown argument(s) for ``owner``" naming them and those it takes.

    Examples
    --------
    >>> check_keywords({"radius": 1}, ["radius", "schema"], "radius_sweep")
    >>> check_keywords({"radious": 1}, ["radius"], "radius_sweep")
    Traceback (most recent call last):
    ...
    bayes_risk.exceptions.ValidationError: unknown argument(s) for radius_sweep: ['radious']; \
it takes radius.
    """
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        takes = sorted(allowed) if isinstance(allowed, (set, frozenset)) else list(allowed)
        raise ValidationError(f"unknown argument(s) for {owner}: {unknown}; it takes "
                              f"{', '.join(map(str, takes))}.", code="INVALID_ARGUMENT")


def checked(constraint: Constraint, *, label: str | None = None,
            code: str | None = None) -> dict[str, Any]:
    """``metadata=`` of a spec field checked by ``constraint`` (:func:`check_fields`); merge
    it with a field's other metadata by ``|``. ``label`` replaces ``Spec.field`` as the name
    the error gives."""
    return {"check": (constraint, label, code)}


def check_fields(spec: Any, *, prefix: str | None = None) -> None:
    """Check each field of the dataclass instance ``spec`` that declares a constraint
    (:func:`checked`) and set it to its checked value (frozen or not); the error names it as
    ``prefix`` + its name (default prefix ``"Spec."``, the class's name) unless its ``label``
    says otherwise; then the relations of its class's ``RELATIONS`` (:func:`check_relations`).
    Call it from ``__post_init__``."""
    prefix = f"{type(spec).__name__}." if prefix is None else prefix
    for f in dataclasses.fields(spec):
        if "check" in f.metadata:
            constraint, label, code = f.metadata["check"]
            value = check_value(getattr(spec, f.name), constraint,
                                label or f"{prefix}{f.name}", code=code)
            object.__setattr__(spec, f.name, value)
    check_relations(spec, getattr(type(spec), "RELATIONS", ()), owner=prefix)
