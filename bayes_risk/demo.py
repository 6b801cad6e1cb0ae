"""The demo: ``bayes-risk audit`` on demo data made by code (CE-like with CART, ACS-like with
DPMPM), the releases made and audited by the command line's sub-commands, run on files as a
user would run them (``bayes-risk demo``)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from bayes_risk._specs import cli_option

__all__ = ["run_demo", "DEMO_SEED"]

CE_CATEGORICAL = ["Urban", "Marital", "Tenure"]
CE_SYNTHESIZED = ["Tenure", "Expenditure", "Income"]
#: Hornby & Hu's intruder: the unsynthesized keys and the true value of a synthesized one (an
#: intruder who knows only unsynthesized columns finds the same records in every release)
CE_KNOWN = ["Age", "Urban", "Marital", "Income"]
ACS_ID_KEY = ["SEX", "AGE", "RACE", "MAR"]
ACS_TARGETS = ["EDUC", "DIS"]
#: the demo's DPMPM run unless ``draws`` is given: the model's default run (1,000 warm-up
#: sweeps, every 5th sweep kept, extending itself up to 50,000 sweeps while its convergence
#: checks fail) with 300 kept draws per chain instead of 500
DEMO_DRAWS = 300
DEMO_THIN = 5
DEMO_MAX_SWEEPS = 50_000
#: the demo's seed unless one is given: the same demo, the same numbers
DEMO_SEED = 2026


def run_demo(
    out: str | os.PathLike[str],
    command: Callable[[str, list[str]], None],
    *,
    m: Annotated[int, cli_option("-m", "number of synthetic datasets (default 5)",
                                 type=int)] = 5,
    n_ce: Annotated[int, cli_option(
        "--n-ce", "records in the CE-like table (default 5571, the size of the CE sample)",
        type=int, metavar="N")] = 5571,
    n_acs: Annotated[int, cli_option(
        "--n-acs", "records in the ACS-like table (default 2000)", type=int, metavar="N")] = 2000,
    # None: the DPMPM's own defaults (2 chains, 1,000 warm-up sweeps, K = 50, a run that
    # extends itself while its convergence checks fail) with 300 draws kept every 5th sweep
    # (the model keeps 500), so that the demo's fits and the audit's augmented fits are runs a
    # user's could be, and the report's convergence checks speak of those
    components: Annotated[int | None, cli_option(
        "--components", "DPMPM truncation level (default: the model's, 50)", type=int,
        metavar="K")] = None,
    tune: Annotated[int | None, cli_option(
        "--tune", "DPMPM warm-up sweeps per chain (default: the model's, 1000)",
        type=int)] = None,
    draws: Annotated[int | None, cli_option(
        "--draws", "DPMPM kept draws per chain (default 300, taken every 5th of 1,500 sweeps, "
        "the run extending itself while its convergence checks fail; the model's default keeps "
        "500; given, every sweep is kept and the run is not extended)", type=int)] = None,
    chains: Annotated[int | None, cli_option(
        "--chains", "DPMPM chains (default: the model's, 2, run in parallel)", type=int)] = None,
    part: Annotated[str, cli_option("--part", "run only one part (default all)",
                                    choices=("all", "ce", "acs"))] = "all",
    random_seed: int = DEMO_SEED,
) -> list[str]:
    """Make the demo data, release and audit them into the folder ``out``.

    Parameters
    ----------
    out : path
        An empty or new folder (its missing parents are made): the data, the releases, the
        audits and ``summary.json`` (the audits' warnings gathered) are written into it. If the
        run fails or is interrupted (Ctrl-C), what it wrote is removed: ``out`` is left as it
        was, empty or absent.
    command : callable
        Runs one step, ``command(name, argv)``: the sub-command line ``argv`` of ``bayes-risk``
        (``bayes_risk.cli.main``'s), ``name`` the step's title; a failure raises. What it
        prints is the run's progress (the steps' own progress bars are the sub-commands').
    m : int
        Synthetic datasets of each release.
    n_ce, n_acs : int
        Records of the CE-like and the ACS-like table (:func:`~bayes_risk.data.make_ce_like`,
        :func:`~bayes_risk.data.make_acs_like`).
    components, tune, draws, chains : int, optional
        The DPMPM's truncation level, warm-up sweeps, kept draws and chains (default: the
        model's, with ``DEMO_DRAWS`` = 300 kept draws every ``DEMO_THIN`` = 5th sweep).
    part : {"all", "ce", "acs"}
        The parts run.
    random_seed : int
        The seed of the data (an integer >= 0; default ``DEMO_SEED`` = 2026); each step's is
        derived from it, so the same seed and settings make the same data and releases.

    Returns
    -------
    list of str
        The audit reports written, relative to ``out`` (``ce/audit/report.html`` ...).

    Raises
    ------
    ValidationError
        Before any step runs: a bad size, DPMPM setting, ``part``, ``random_seed`` or
        ``command``, an ``out`` that is not a path (``INVALID_ARGUMENT``) or is a file or a
        folder that is not empty (``OUT_EXISTS``) or cannot be made (``OUT_NOT_WRITABLE``), or
        work that cannot fit in the memory left (``MEMORY_TOO_LARGE``).
    BayesRiskError
        A step's failure, as ``command`` raises it (``bayes-risk demo``: ``DEMO_STEP_FAILED``).

    Examples
    --------
    The CE part, small, each step run by the command line (about 10 s):

    >>> import contextlib, io, tempfile
    >>> from bayes_risk.cli import main
    >>> def command(name, argv):  # the paths each step prints are kept out of the way
    ...     with contextlib.redirect_stdout(io.StringIO()):
    ...         status = main([*argv, "--quiet"])
    ...     if status != 0:
    ...         raise RuntimeError(f"step {name!r} failed")
    >>> out = tempfile.mkdtemp()
    >>> run_demo(out, command, part="ce", n_ce=100, m=1)  # doctest: +SKIP
    ['ce/audit/report.html']
    """
    from bayes_risk._constraints import Interval, Options, check_value
    from bayes_risk._sampling_spec import Sampling
    from bayes_risk.data.validate import check_m
    from bayes_risk.exceptions import ValidationError

    m = check_m(m)
    # checked before any step runs, so that an error names the demo's own argument rather than
    # a step's command line in a temporary folder (the sampler's by their spec)
    Sampling(draws=draws, tune=tune, chains=chains)
    if components is not None:
        check_value(components, Interval(int, 1), "components")
    part = check_value(part, Options(("all", "ce", "acs"), listed=True), "part")
    random_seed = check_value(random_seed, Interval(int, 0), "random_seed")
    if not callable(command):
        raise ValidationError("command must be a function command(name, argv) running one step. "
                              f"Got {type(command).__name__}.", code="INVALID_ARGUMENT")
    _check_sizes(m, n_ce, n_acs, components, tune, draws, chains, part)
    out = _empty_folder(out)
    # the outermost folder this run makes (out or a parent of it), removed if the run stops
    made = next((p for p in (*reversed(out.parents), out) if not p.exists()), None)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # under a file, no permission, a read-only drive
        raise ValidationError(f"out {str(out)!r} cannot be made: {err.strerror}.",
                              code="OUT_NOT_WRITABLE") from err
    try:
        return _run(out, command, m=m, n_ce=n_ce, n_acs=n_acs, components=components, tune=tune,
                    draws=draws, chains=chains, part=part, seed=random_seed)
    except BaseException:  # Ctrl-C included: no half-written demo is left behind
        import shutil

        for path in [made] if made is not None else list(out.iterdir()):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        raise


def _empty_folder(out: Any) -> Path:
    """``out`` as a path to a folder that is empty or does not exist."""
    from bayes_risk.exceptions import ValidationError

    if not isinstance(out, (str, os.PathLike)) or str(out) == "":
        got = repr(out) if isinstance(out, str) else type(out).__name__
        raise ValidationError(f"out must be a path to a folder. Got {got}.",
                              code="INVALID_ARGUMENT")
    path = Path(out)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        what = "a folder that is not empty" if path.is_dir() else "a file"
        raise ValidationError(f"out {str(path)!r} is {what}; expected an empty or new folder.",
                              code="OUT_EXISTS")
    return path


def _run(out: Path, command: Callable[[str, list[str]], None], *, m: int, n_ce: int,
         n_acs: int, components: int | None, tune: int | None, draws: int | None,
         chains: int | None, part: str, seed: int) -> list[str]:
    """:func:`run_demo`'s steps into the folder ``out``, the arguments checked."""
    from bayes_risk._io import write_json
    from bayes_risk.data import make_acs_like, make_ce_like

    timings: dict[str, float] = {}
    reports: list[str] = []

    def step(name: str, argv: list[str]) -> None:
        t0 = time.perf_counter()
        command(name, argv)
        timings[name] = time.perf_counter() - t0

    if part in ("all", "ce"):
        ce_dir = out / "ce"
        ce_dir.mkdir(exist_ok=True)
        ce_csv = ce_dir / "original.csv"
        make_ce_like(n_ce, random_seed=seed).to_csv(ce_csv, index=False)
        syn = ce_dir / "synthetic"
        step("CE: CART synthesis", [
            "synthesize", str(ce_csv), "--method", "cart", "--synthesize", *CE_SYNTHESIZED,
            "--categorical", *CE_CATEGORICAL, "-m", str(m), "--random-seed", str(seed + 1),
            "--out", str(syn),
        ])
        step("CE: audit", [
            "audit", str(ce_csv), str(syn), "--known", *CE_KNOWN,
            "--target", "Expenditure", "--random-seed", str(seed + 4),
            "--out", str(ce_dir / "audit"),
        ])
        reports.append("ce/audit/report.html")

    if part in ("all", "acs"):
        acs_dir = out / "acs"
        acs_dir.mkdir(exist_ok=True)
        acs = make_acs_like(n_acs, random_seed=seed)
        acs_csv = acs_dir / "original.csv"
        acs.to_csv(acs_csv, index=False)
        model = acs_dir / "model"
        syn = acs_dir / "synthetic"
        mcmc = [a for opt, v in (("--components", components), ("--tune", tune),
                                 ("--draws", draws), ("--chains", chains))
                if v is not None for a in (opt, str(v))]
        if draws is None:
            # the model's default run (every 5th sweep kept, extended while its convergence
            # checks fail) with fewer kept draws: the fit and the attribute step's m refits
            # (same settings) are most of the demo's time, and these draws pass the checks
            mcmc += ["--draws", str(DEMO_DRAWS), "--thin", str(DEMO_THIN),
                     "--max-sweeps", str(DEMO_MAX_SWEEPS)]
        step("ACS: DPMPM fit", [
            "fit", str(acs_csv), "--method", "dpmpm", *mcmc, "--random-seed", str(seed + 2),
            "--out", str(model),
        ])
        step("ACS: DPMPM synthesis", [
            "synthesize", "--model", str(model), "-m", str(m),
            "--random-seed", str(seed + 3), "--out", str(syn),
        ])
        step("ACS: audit", [
            "audit", str(acs_csv), str(syn), "--model", str(model), "--known", *ACS_ID_KEY,
            "--categorical", *acs.columns, "--target", *ACS_TARGETS,
            "--random-seed", str(seed + 4), "--out", str(acs_dir / "audit"),
        ])
        reports.append("acs/audit/report.html")

    # the audits' warnings, gathered where a reader of the demo's own summary.json looks
    steps = []
    for rel in reports:
        d = json.loads((out / Path(rel).parent / "summary.json").read_text())
        name = rel.split("/", 1)[0]
        steps += [{**w, "step": f"{name}/audit/{w['step']}"} for w in d.get("step_warnings", [])]
    write_json(out / "summary.json", {
        "command": "demo",
        "reports": reports,
        "timings": timings,
        "steps_with_warnings": sorted({w["step"] for w in steps}),
        "step_warnings": steps,
        "warnings": list(dict.fromkeys(w["code"] for w in steps)),
    })
    return reports


def _check_sizes(m: int, n_ce: Any, n_acs: Any, components: int | None, tune: int | None,
                 draws: int | None, chains: int | None, part: str) -> None:
    """Refuse, before any step, tables, releases and a DPMPM posterior that cannot fit in the
    memory left (the steps check their own work again as they run)."""
    from bayes_risk._constraints import Interval, check_value
    from bayes_risk._memory import check_memory, posterior_bytes, release_bytes
    from bayes_risk.data import make_acs_like, make_ce_like
    from bayes_risk.exceptions import arg_name

    check_value(n_ce, Interval(int, 1), "n_ce")
    check_value(n_acs, Interval(int, 1), "n_acs")
    if part in ("all", "ce"):
        row = make_ce_like(50, random_seed=0).memory_usage(deep=True).sum() / 50
        check_memory(release_bytes(m, row * n_ce, fitted=True),
                     f"{arg_name('n_ce')} or {arg_name('m')}",
                     what=f"a CE-like table of {n_ce:,} records and {m:,} syntheses of it")
    if part in ("all", "acs"):
        small = make_acs_like(50, random_seed=0)
        row = small.memory_usage(deep=True).sum() / 50
        width = sum(small[c].nunique() for c in small.columns)  # every level a parameter
        posterior = posterior_bytes(
            n_acs, small.shape[1], width, components or 50, draws=draws or DEMO_DRAWS,
            chains=chains or 2, tune=1000 if tune is None else tune)
        names = ", ".join(arg_name(n) for n in ("n_acs", "m", "tune", "draws", "chains"))
        check_memory(release_bytes(m, row * n_acs, fitted=False) + posterior,
                     f"{names} or {arg_name('components')}",
                     what=f"an ACS-like table of {n_acs:,} records, its DPMPM posterior "
                          f"and {m:,} syntheses")
