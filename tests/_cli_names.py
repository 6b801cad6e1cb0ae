"""Whether a line the command line printed names an argument of the Python library.

The command line's errors and warnings must name its own options (``--max-order 0``), never
the arguments of the functions behind them (``max_order=0``, ``known_unsynthesized``): issue
46, item 7. :func:`library_leaks` finds such names in a line, so that every test of the
command line's messages can check it (the bad-input corpus does, for each of its cases).
"""

from __future__ import annotations

import functools
import inspect
import re

#: names of the library that also mean something else in a message: a file's field
#: (``manifest.json``'s ``n_records``) or a measure / column of an output file
NOT_ARGUMENTS = frozenset({
    "n_records",  # a field of manifest.json / model.json that the message names
    "expected_match_risk", "true_match_rate", "p_true",  # measures, columns of records.csv
})


@functools.cache
def library_names() -> frozenset[str]:
    """Every parameter name of the public functions and classes a sub-command calls."""
    import bayes_risk
    import bayes_risk.models as models
    from bayes_risk.attribute.knowledge import attribute_known_sweep
    from bayes_risk.data import infer_schema, read_synthetic, read_table
    from bayes_risk.distributed import connect
    from bayes_risk.identification.knowledge import known_sweep

    objs = [getattr(bayes_risk, n) for n in bayes_risk.__all__]
    objs += [getattr(models, n) for n in models.__all__]
    objs += [attribute_known_sweep, known_sweep, connect, infer_schema, read_table,
             read_synthetic]
    names: set[str] = set()
    for obj in objs:
        fns = ([getattr(obj, a) for a in ("__init__", "fit", "synthesize") if hasattr(obj, a)]
               if inspect.isclass(obj) else [obj] if callable(obj) else [])
        for fn in fns:
            try:
                params = inspect.signature(fn).parameters
            except (TypeError, ValueError):
                continue
            names |= {p for p in params if p not in ("self", "cls", "args", "kwargs")}
    return frozenset(names - NOT_ARGUMENTS)


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def library_leaks(line: str) -> list[str]:
    """The library's argument names ``line`` holds outside quotes (column names and values are
    quoted): a name with an underscore anywhere, any name written as a keyword argument
    (``skip=``, ``m=``); a name right after an option (``--threshold s_pmse=0``, a column of
    ``--radius``) is the option's value, not a leak."""
    text = _QUOTED.sub("''", line)
    found = []
    for name in library_names():
        pat = (rf"(?<![\w\-.]){re.escape(name)}(?![\w])" if "_" in name
               else rf"(?<![\w\-.]){re.escape(name)}=")
        for m in re.finditer(pat, text):
            before = text[:m.start()].rstrip().split(" ")
            if before and before[-1].startswith("-"):
                continue
            found.append(name)
            break
    return sorted(found)
