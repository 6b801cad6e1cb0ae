"""Column names compared as a reader sees them: the Unicode confusable skeleton (UTS #39) of a
name with case and white space folded, and the characters that tell two such names apart
(:doc:`/user_guide/data`, Column names)."""

from __future__ import annotations

import difflib
import functools
import unicodedata
from collections.abc import Sequence

__all__ = ["name_key", "invisible_characters", "name_difference", "same_as_typed"]

#: default-ignorable code points outside the format category (Cf): the combining grapheme
#: joiner, Mongolian free variation selectors, Hangul fillers and the variation selectors
#: (Unicode's DerivedCoreProperties.txt, Default_Ignorable_Code_Point)
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
                     (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
                     (0xE0000, 0xE0FFF))


def _invisible(ch: str) -> bool:
    """Whether ``ch`` prints as nothing: a format character (zero-width space, joiners,
    direction marks, soft hyphen, byte-order mark) or another default-ignorable code point."""
    if unicodedata.category(ch) == "Cf":
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES)


def invisible_characters(name: str) -> list[str]:
    """The characters of ``name`` that print as nothing, in order (``[]`` for most names)."""
    return [ch for ch in name if _invisible(ch)]


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character's prototype (UTS #39 ``confusables.txt``, as the
    confusable-homoglyphs package ships it).

    The package keeps each pair of the table in both directions: a source character lists its
    one prototype, a prototype every source of it. A prototype with a single source lists it
    alone, like a source: both then map to the smaller of the two, which leaves the relation
    "same skeleton" that of the table.
    """
    from confusable_homoglyphs.utils import load

    table = load("confusables.json")
    out: dict[str, str] = {}
    for ch, alikes in table.items():
        if len(ch) != 1 or len(alikes) != 1:
            continue  # a sequence, or the prototype of several sources: itself
        proto = alikes[0]["c"]
        back = table.get(proto, [])
        if len(proto) == 1 and len(back) == 1 and back[0]["c"] == ch:
            proto = min(ch, proto)
        if proto != ch:
            out[ch] = proto
    return out


def _folded(name: str) -> str:
    """``name`` in compatibility form (NFKC), case folded, with its white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", str(name)).casefold().split())


def name_key(name: str) -> str:
    """The form of a column name that two names share when a reader cannot tell them apart.

    The name is put in compatibility form and case folded with its white space collapsed
    (``'Income '`` and ``'income'`` share a key); a name with a character outside ASCII is
    also reduced to its confusable skeleton (UTS #39, section 4: invisible characters dropped,
    each character replaced by its prototype), so that a Cyrillic ``'Аge'`` or ``'Urban'``
    with a zero-width space share the key of ``'Age'`` and ``'Urban'``. Two ASCII names keep
    their letters: ``'x1'`` and ``'xl'`` are different names a user types and reads apart.

    Examples
    --------
    >>> name_key("Аge") == name_key("Age")  # Cyrillic A
    True
    >>> name_key("Urban\\u200b") == name_key("urban")
    True
    >>> name_key("x1") == name_key("xl")
    False
    """
    folded = _folded(name)
    if folded.isascii():
        return folded
    proto = _prototypes()
    text = "".join(ch for ch in unicodedata.normalize("NFD", folded) if not _invisible(ch))
    # ASCII characters stay themselves, as in an ASCII name (its '1' is not an 'l')
    text = "".join(ch if ch.isascii() else proto.get(ch, ch) for ch in text)
    # a prototype may be upper case ('0' -> 'O') or composed: folded and decomposed again
    return unicodedata.normalize("NFD", _folded(text))


def _named(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed character')}"


def name_difference(name: str, other: str) -> str:
    """What tells ``other`` from ``name`` when both print alike: its invisible characters and
    the characters outside ASCII that stand where ``name`` has others, named by code point
    (empty when ``other`` holds none: the difference is then in ``name``, or in case).

    Examples
    --------
    >>> print(name_difference("Age", "\\u0410ge"))
    'Аge' holds U+0410 CYRILLIC CAPITAL LETTER A where 'Age' has 'A'
    """
    parts: list[str] = []
    hidden = invisible_characters(other)
    if hidden:
        names = ", ".join(dict.fromkeys(_named(ch) for ch in hidden))
        parts.append(f"{names}, {'an invisible character' if len(set(hidden)) == 1 else
                                  'invisible characters'}")
    visible_a = "".join(ch for ch in name if not _invisible(ch))
    visible_b = "".join(ch for ch in other if not _invisible(ch))
    sm = difflib.SequenceMatcher(a=visible_a, b=visible_b, autojunk=False)
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op == "equal":
            continue
        for ch in visible_b[b0:b1]:
            if not ch.isascii():
                like = visible_a[a0:a1]
                parts.append(_named(ch) + (f" where {name!r} has {like!r}" if like else ""))
    return f"{other!r} holds {'; '.join(dict.fromkeys(parts))}" if parts else ""


def same_as_typed(name: str, names: Sequence[str]) -> list[str]:
    """The names among ``names`` that a reader cannot tell from ``name`` (:func:`name_key`),
    other than ``name`` itself."""
    key = name_key(name)
    return [n for n in names if n != name and name_key(n) == key]
