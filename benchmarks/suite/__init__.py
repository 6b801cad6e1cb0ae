"""The benchmark suite of bayes-risk (airspeed velocity: ``time_*``, ``peakmem_*``, ``track_*``).

Run from ``benchmarks/``: ``asv run --python=same`` (the installed package) or ``make bench``;
``benchmarks/README.md`` has the table of current figures and the goals.
"""
