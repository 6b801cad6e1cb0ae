"""The run's memory budget (``bayes_risk._memory``): sizes, the limit's scope, the checks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from bayes_risk import _memory
from bayes_risk.cli._run import command_line_options
from bayes_risk.exceptions import ValidationError


@pytest.mark.parametrize("value, nbytes", [
    ("2GB", 2 * 10**9), ("512MB", 512 * 10**6), ("1.5GiB", 3 * 2**29), ("64 mib", 64 * 2**20),
    ("1000000", 10**6), (3 * 10**9, 3 * 10**9), (2.5e9, 2_500_000_000), (None, None),
])
def test_parse_memory(value, nbytes):
    assert _memory.parse_memory(value) == nbytes


@pytest.mark.parametrize("value", ["2XB", "GB", "", "-1GB", "0.5MB", "nan", True, float("inf")])
def test_parse_memory_refuses(value):
    with pytest.raises(ValidationError, match="--memory") as err:
        _memory.parse_memory(value, "--memory")
    assert err.value.code == "BAD_OPTION_VALUE"
    with pytest.raises(ValidationError) as err:
        _memory.parse_memory(value)
    assert err.value.code == "INVALID_ARGUMENT"


def test_limits_nest_and_end_with_their_block():
    assert _memory.current_limit() is None
    with _memory.memory_limit("8GB"):
        assert _memory.current_limit() == 8 * 10**9
        with _memory.memory_limit("16GB"):  # a wider inner limit does not widen the outer
            assert _memory.current_limit() == 8 * 10**9
        with _memory.memory_limit("4GB"):
            assert _memory.current_limit() == 4 * 10**9
        with _memory.memory_limit(None):
            assert _memory.current_limit() == 8 * 10**9
        assert _memory.current_limit() == 8 * 10**9
    assert _memory.current_limit() is None


def test_budget_counts_the_resident_memory():
    resident = _memory.resident_memory()
    assert resident > 10**6  # the interpreter and numpy
    with _memory.memory_limit(resident + 400 * 10**6):
        left = _memory.room()
        assert 0 < left <= 400 * 10**6
        # a quarter of what is left, below the fast size; never below the floor
        assert _memory.working_bytes(10**12) == max(_memory.MIN_WORKING_BYTES, left // 4)
        assert _memory.working_bytes(1) == _memory.MIN_WORKING_BYTES
        _memory.check_memory(left / 2, "n", what="a table")
        with pytest.raises(ValidationError, match=r"of the memory limit .*memory_limit.*reduce n "
                                                  r"or raise the limit") as err:
            _memory.check_memory(10**9, "n", what="a table")
        assert err.value.code == "MEMORY_TOO_LARGE"
        with command_line_options({"memory": "--memory"}), \
                pytest.raises(ValidationError, match=r"of the memory limit .*, --memory\)"):
            _memory.check_memory(10**9, "n", what="a table")
    with _memory.memory_limit(2 * 10**6):  # below what the process holds: nothing is left
        assert _memory.room() == 0


#: a process the command leans (``lean_process``) runs a kernel, then imports SciPy's linear
#: algebra and compiles numba's dot product, which loads SciPy's BLAS then
_LEAN_NUMBA = """
import sys
from bayes_risk._memory import lean_process
lean_process(blas_threads={blas})
import numpy as np
from bayes_risk.identification.index import value_orders
assert value_orders(np.array([[3.0, -1.0, 2.0]])).tolist() == [[1, 2, 0]]
print("scipy.linalg" in sys.modules)
import numba
import scipy.linalg
assert scipy.linalg.solve(np.eye(2), np.ones(2)).tolist() == [1.0, 1.0]
assert numba.njit(lambda a: np.dot(a, a))(np.arange(3.0)) == 5.0
"""


@pytest.mark.parametrize("blas", [False, True])
def test_a_lean_process_loads_numba_without_scipys_linear_algebra(blas):
    # the identification command without --model (blas=False): 14 MiB fewer held; with it
    # (a model's draws may multiply) numba loads as it does elsewhere
    r = subprocess.run([sys.executable, "-c", _LEAN_NUMBA.format(blas=blas)],
                       capture_output=True, text=True, timeout=300, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(blas)]


def test_format_bytes_reads_back():
    assert _memory.format_bytes(1.5e9) == "1.5 GB"
    assert _memory.format_bytes(999) == "999 B"
    assert _memory.parse_memory(_memory.format_bytes(2.5e9).replace(" ", "")) == 2_500_000_000


# --------------------------------------------- the budget in Python: bayes_risk.memory_limit
def _room_left(nbytes: int) -> int:
    """A limit leaving about ``nbytes`` beyond what the process holds now."""
    return _memory.resident_memory() + nbytes


def _identification_problem():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 20_000
    y = pd.DataFrame({"region": rng.integers(0, 10, n), "size": rng.integers(0, 8, n),
                      "income": rng.lognormal(10, 1.0, n).round(0)})
    syn = [y.assign(income=(y["income"] * rng.lognormal(0, 0.1, n)).round(0))
           for _ in range(3)]
    return y, syn


def _identify(y, syn, aggregation="pooled"):
    import bayes_risk as br

    return br.identification_risk(
        y, syn, known=["region", "size", "income"], synthesized=["income"],
        categorical=["region", "size"], match=br.MatchSpec(radius={"income": 0.05}),
        aggregation=aggregation, progressbar=False)


def test_memory_limit_chunks_identification_with_the_same_numbers(monkeypatch):
    import numpy as np

    import bayes_risk as br
    from bayes_risk.identification import pooled

    y, syn = _identification_problem()
    calls = []
    chunk = pooled._pool_chunk
    monkeypatch.setattr(pooled, "_pool_chunk", lambda *a: calls.append(a[2:]) or chunk(*a))
    free = _identify(y, syn)
    n_free = len(calls)
    calls.clear()
    # 64 MB left: the chunks get the 16 MB floor instead of 256 MB
    with br.memory_limit(_room_left(64 * 10**6)):
        tight = _identify(y, syn)
    assert len(calls) > n_free  # more, smaller chunks
    assert tight.records.equals(free.records)
    assert (tight.prob != free.prob).nnz == 0
    np.testing.assert_array_equal(tight.prob.data, free.prob.data)


def test_memory_limit_refuses_identification_beforehand():
    import bayes_risk as br

    y, syn = _identification_problem()
    # 0.4 MB left: not even one replicate's index (0.8 MB; the three would be matched in turn)
    with br.memory_limit(_room_left(4 * 10**5)), pytest.raises(ValidationError) as err:
        _identify(y, syn)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "reduce the number of synthetic datasets or of records" in str(err.value)
    assert "raise the limit to at least" in str(err.value)


def _attribute_problem(n: int = 300, H: int = 400, chains: int | None = None):
    """A model of two synthesized columns (6 candidates a record) and two augmented fits;
    ``chains=2``: its draws in two chains (the between-chain check runs)."""
    import numpy as np
    import pandas as pd

    from bayes_risk.data import infer_schema
    from bayes_risk.models import ArrayModel

    rng = np.random.default_rng(2)
    orig = pd.DataFrame({"a": pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]),
                         "b": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1]),
                         "u": pd.Categorical(rng.integers(0, 2, n), categories=[0, 1])})
    schema = infer_schema(orig, synthesized=["a", "b"])

    def ll(rec, d):
        return (np.log(d["pa"][:, rec["a"].astype(int).to_numpy()])
                + np.log(d["pb"][:, rec["b"].astype(int).to_numpy()]))

    def draws():
        return {"pa": rng.dirichlet(np.ones(3) * 5, size=H),
                "pb": rng.dirichlet(np.ones(2) * 5, size=H)}

    model = ArrayModel(ll, draws(), schema, chains=chains)
    syn = [orig.assign(a=pd.Categorical(rng.integers(0, 3, n), categories=[0, 1, 2]))
           for _ in range(2)]
    return model, orig, syn, [model.with_draws(draws(), chains=chains) for _ in range(2)]


def _attribute(model, orig, syn, aug, bootstrap=30, records=None):
    import warnings

    import bayes_risk as br

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return br.attribute_risk(
            orig, syn, model=model, candidates="product", random_seed=3, progressbar=False,
            estimator=br.EstimatorSpec(augmented=aug, bootstrap=bootstrap), records=records)


def _spy_chunks(monkeypatch):
    """The plans (and chunk sizes) attribute risk sizes its chunks for, as they are made."""
    from bayes_risk.attribute import evaluate, prepare

    plans = []

    def spy(plan, chunk_size):
        plans.append((plan, evaluate.chunk_records(plan, chunk_size)))
        return plans[-1][1]

    monkeypatch.setattr(prepare, "chunk_records", spy)
    return plans


def _held_bytes(res) -> int:
    """Bytes of the distinct arrays an attribute result keeps for its records (views counted
    by the arrays they view)."""
    import numpy as np

    seen: dict[int, int] = {}

    def add(a):
        while isinstance(a.base, np.ndarray):
            a = a.base
        seen[id(a)] = a.nbytes

    for arrays in (res.loglik, res.logprior, res.log_post, res._boot_loglik or [],
                   res._prior_inputs.log_mean_r or [], [c.values for c in res.candidates]):
        for a in arrays:
            add(a)
    for d in res.diagnostics:
        for v in d.values():
            add(v)
    return sum(seen.values())


@pytest.mark.parametrize("chains, bootstrap", [(None, 0), (None, 40), (2, 40)])
def test_attribute_counts_every_output_a_record_keeps(monkeypatch, chains, bootstrap):
    """The outputs checked before the records are evaluated (and reserved when the chunks are
    sized) are at least what the result keeps, and not much more."""
    from bayes_risk.attribute.evaluate import output_bytes

    plans = _spy_chunks(monkeypatch)
    res = _attribute(*_attribute_problem(n=400, chains=chains), bootstrap=bootstrap)
    plan = plans[0][0]
    assert (plan.chains is not None and plan.chains.run) == (chains == 2)
    counted = len(res.records) * output_bytes(plan, 6)
    held = _held_bytes(res)
    assert held <= counted <= 1.25 * held + len(res.records) * 2048


def _peak_resident() -> int:
    """Bytes of the process's peak resident memory since :func:`_reset_peak` (Linux)."""
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak resident memory")
def test_attribute_stays_within_its_memory_limit(monkeypatch):
    """At the least limit its refusal names (a little above what the process holds with the
    kept outputs), the chunks shrink to what is left beside the outputs and the assembly, and
    the process's peak, the result's summary included, stays within the limit."""
    import gc

    import bayes_risk as br
    from bayes_risk.attribute.evaluate import MAX_CHUNK_RECORDS, output_bytes

    problem = _attribute_problem(n=4000, H=1000)
    plans = _spy_chunks(monkeypatch)
    _attribute(*problem, bootstrap=500, records=range(300)).to_dict()  # kernels, caches warm
    n = len(problem[1])
    gc.collect()
    with br.memory_limit(_room_left(int(n * output_bytes(plans[0][0], 6)))), \
            pytest.raises(ValidationError, match="raise the limit to at least") as err:
        _attribute(*problem, bootstrap=500)
    least = re.search(r"at least ([\d.]+) ([kMG]B)", str(err.value))
    # the least limit is necessary, not sufficient: under a wider limit the stages before the
    # check keep a few MB more (larger blocks), so the run is given 5 % more
    limit = int(1.05 * _memory.parse_memory(least.group(1) + least.group(2)))
    gc.collect()
    _reset_peak()
    with br.memory_limit(limit):
        res = _attribute(*problem, bootstrap=500)
        res.to_dict()  # the summary's Monte Carlo figures
    peak = _peak_resident()
    assert len(res.records) == n
    assert plans[-1][1] < MAX_CHUNK_RECORDS
    assert peak <= limit, f"peak {peak / 1e6:.0f} MB above the limit {limit / 1e6:.0f} MB"


def test_the_summarys_monte_carlo_figures_stay_within_what_is_reserved_for_them():
    """The summary's Monte Carlo file figures (the first ``to_dict()``) stay within what the
    chunk sizing reserves after the records' loop (``assembly_bytes``: the two ``[B, n]``
    tables of the replicates' ``p_true`` and rank, and blocks): their bias correction runs a
    block of records at a time. Corrected over the whole table at once they held 5.4 tables
    at their peak, past the reservation from about 2,000 records at B = 500 (a run at its
    memory limit went 1 % over it)."""
    import tracemalloc

    from bayes_risk.attribute.evaluate import assembly_bytes

    res = _attribute(*_attribute_problem(n=3000, H=400), bootstrap=500)
    n, G, B = len(res.records), 6, 500
    tracemalloc.start()
    try:
        res.to_dict()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 2 * 8 * B * n < peak <= assembly_bytes(n, G, B), peak / (16 * B * n)


def test_memory_limit_sizes_attribute_chunks_with_the_same_numbers(monkeypatch):
    import pandas as pd

    import bayes_risk as br
    from bayes_risk.attribute import chains, evaluate, record_table

    problem = _attribute_problem(chains=2)
    plans = _spy_chunks(monkeypatch)
    free = _attribute(*problem)
    # and the assembly's blocks of records (as many as the records otherwise)
    monkeypatch.setattr(chains, "STACK_RECORDS", 7)
    monkeypatch.setattr(record_table, "STACK_RECORDS", 7)
    monkeypatch.setattr(record_table, "BOOT_BLOCK_VALUES", 500)
    with br.memory_limit(_room_left(64 * 10**6)):
        tight = _attribute(*problem)
    sizes = [size for _, size in plans]
    # 6 candidates x 400 draws under 3 posteriors: 16 MB hold about 100 records
    assert sizes[0] == evaluate.MAX_CHUNK_RECORDS
    assert 1 < sizes[1] < 300 // 2
    pd.testing.assert_frame_equal(tight.records, free.records, check_exact=True)


def test_memory_limit_refuses_attribute_beforehand():
    import bayes_risk as br

    problem = _attribute_problem(n=3000, H=50)
    with br.memory_limit(_room_left(10**6)), pytest.raises(ValidationError) as err:
        _attribute(*problem, bootstrap=200)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "reduce records, bootstrap or candidates" in str(err.value)
    # the least limit the message names passes (the outputs and one record's work fit)
    need = re.search(r"at least ([\d.]+) ([kMG]B)", str(err.value))
    with br.memory_limit(need.group(1) + need.group(2)):
        assert len(_attribute(*problem, bootstrap=200).records) == 3000


def test_prior_sweeps_check_the_stacks_they_keep_first():
    import bayes_risk as br

    res = _attribute(*_attribute_problem(chains=2))
    with br.memory_limit(_room_left(10**4)):
        with pytest.raises(ValidationError, match="under 1 priors and the stacked likelihoods "
                                                  "of the result") as err:
            br.prior_sensitivity(res, priors=["uniform"])
        assert err.value.code == "MEMORY_TOO_LARGE"
        with pytest.raises(ValidationError, match="stacked likelihoods of the result's 300 "
                                                  "records") as err:
            br.with_prior(res, prior="uniform")
        assert err.value.code == "MEMORY_TOO_LARGE"
    assert "stacks" not in res._cache
    assert len(br.prior_sensitivity(res, priors=["uniform"])) == 300


def test_known_sweep_pools_in_chunks_beyond_the_size_of_pooled_probabilities(monkeypatch):
    """The sweep keeps no pooled probabilities, so their size limit (``MAX_NNZ``, which a
    single run still enforces unless ``aggregation="pooled_measures"``) does not stop it: the
    same table, whatever the limit."""
    import warnings

    import bayes_risk as br
    from bayes_risk.identification import engine

    y, syn = _identification_problem()
    y, syn = y[:3000], [s[:3000] for s in syn]
    kw = dict(candidates=["region", "size", "income"], synthesized=["income"],
              categorical=["region", "size"], match=br.MatchSpec(radius={"income": 0.05}),
              aggregation="pooled", progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ZERO_UNIQUE of the coarse subsets
        ref = br.known_sweep(y, syn, **kw).to_dataframe()
        full = _identify(y, syn)
        monkeypatch.setattr(engine, "MAX_NNZ", 3)
        assert br.known_sweep(y, syn, **kw).to_dataframe().equals(ref)
        lean = _identify(y, syn, aggregation="pooled_measures")
    with pytest.raises(ValidationError, match="per_dataset"):
        _identify(y, syn)
    assert lean.prob is None
    import numpy as np
    import pandas as pd

    pd.testing.assert_frame_equal(lean.records, full.records)
    np.testing.assert_equal(lean.file, full.file)


# ------------------------------------------------------------------------- membership risk
def _membership_problem(n: int, H: int):
    """Members and as many holdout records of two categorical columns; a model given by draws
    and one augmented fit (m = 1: no population normaliser)."""
    import numpy as np
    import pandas as pd

    from bayes_risk import ArrayModel, infer_schema

    rng = np.random.default_rng(11)

    def table(k):
        return pd.DataFrame({"a": rng.integers(0, 5, k).astype(str),
                             "b": rng.integers(0, 4, k).astype(str)})

    def ll(records, th):
        a, b = records["a"].astype(int).to_numpy(), records["b"].astype(int).to_numpy()
        return np.log(th["pa"][:, a]) + np.log(th["pb"][:, b])

    def draws():
        return {"pa": rng.dirichlet(np.ones(5) * 5, size=H),
                "pb": rng.dirichlet(np.ones(4) * 5, size=H)}

    orig = table(n)
    model = ArrayModel(ll, draws(), infer_schema(orig, categorical=["a", "b"],
                                                 synthesized=["a", "b"]))
    return model, orig, [table(n)], table(n), [model.with_draws(draws())]


def _membership(model, orig, syn, hold, aug):
    import warnings

    import bayes_risk as br

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MODEL_DIFFERS: the release is not the model's
        return br.membership_risk(
            model, orig, syn, holdout=hold, random_seed=1, allow_other_model=True,
            ratio=br.RatioSpec(augmented=aug), attack=br.AttackSpec(bootstrap=0, dcr=False))


def test_membership_chunks_with_the_same_numbers(monkeypatch):
    """Targets and slots in chunks (of 17 and 3 rows: 800 targets leave one over, joined to
    the last chunk) give the numbers of one whole chunk, bit for bit."""
    import pandas as pd

    from bayes_risk.membership import evaluate

    problem = _membership_problem(400, 300)
    free = _membership(*problem)
    sizes = []
    chunks = evaluate._chunks
    monkeypatch.setattr(evaluate, "_chunks", lambda *a: sizes.append(chunks(*a)) or (17, 3))
    tight = _membership(*problem)
    assert sizes[0][0] >= 800 and sizes[0][1] >= 400  # without the spy: one chunk each
    pd.testing.assert_frame_equal(tight.records, free.records, check_exact=True)
    assert evaluate._chunk_bounds(7, 3) == [(0, 3), (3, 7)]
    assert evaluate._chunk_bounds(0, 3) == [(0, 0)]


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak resident memory")
def test_membership_stays_within_its_memory_limit():
    """10,000 targets x 1,000 draws (80 MB an array of them): a limit of 250 MB beyond what
    the process holds fits the kept slot log-likelihoods (80 MB) and chunks of targets; the
    whole targets at once peaked about 650 MB higher."""
    import gc

    import bayes_risk as br

    problem = _membership_problem(5000, 1000)
    _membership(*(x[:100] if hasattr(x, "iloc") else x for x in problem[:2]),
                [problem[2][0][:100]], problem[3][:50], problem[4])  # kernels compiled
    gc.collect()
    limit = _room_left(250 * 10**6)
    _reset_peak()
    with br.memory_limit(limit):
        res = _membership(*problem)
    peak = _peak_resident()
    assert len(res.records) == 10_000
    assert peak <= limit, f"peak {peak / 1e6:.0f} MB above the limit {limit / 1e6:.0f} MB"


def test_membership_refuses_beforehand():
    import bayes_risk as br

    problem = _membership_problem(2000, 300)
    with br.memory_limit(_room_left(2 * 10**6)), pytest.raises(ValidationError) as err:
        _membership(*problem)
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert "log-likelihoods of 2,000 slots under 2 posteriors" in str(err.value)


def _dcr_problem():
    import numpy as np

    import bayes_risk as br

    d = br.make_ce_like(10_000, random_seed=1)
    schema = br.infer_schema(d, categorical=["Urban", "Marital", "Tenure", "Educ"])
    rng = np.random.default_rng(0)
    syn = [d.assign(Income=(d["Income"] * rng.lognormal(0, 0.1, len(d))).round())
           for _ in range(3)]
    return d, syn, schema


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak resident memory")
def test_distance_baseline_stays_within_its_memory_limit():
    """The distances of 500 targets to 30,000 released rows: blocks of 64 targets took about
    77 MB; within 40 MB left the blocks shrink, with the same distances."""
    import gc

    import numpy as np

    import bayes_risk as br
    from bayes_risk.membership.dcr import closest_distance

    d, syn, schema = _dcr_problem()
    free = closest_distance(d.iloc[:500], syn, d, schema)
    gc.collect()
    limit = _room_left(40 * 10**6)
    _reset_peak()
    with br.memory_limit(limit):
        tight = closest_distance(d.iloc[:500], syn, d, schema)
    peak = _peak_resident()
    np.testing.assert_array_equal(tight, free)
    assert peak <= limit, f"peak {peak / 1e6:.0f} MB above the limit {limit / 1e6:.0f} MB"
    with br.memory_limit(_room_left(10**6)), pytest.raises(ValidationError) as err:
        closest_distance(d.iloc[:500], syn, d, schema)
    assert err.value.code == "MEMORY_TOO_LARGE"


def _per_dataset_problem(R: int = 20):
    """50,000 targets and ``R`` released datasets (compiled matching)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 50_000
    y = pd.DataFrame({"region": rng.integers(0, 10, n), "size": rng.integers(0, 8, n),
                      "income": rng.lognormal(10, 1.0, n).round(0)})
    return y, [y.assign(income=(y["income"] * rng.lognormal(0, 0.1, n)).round(0))
               for _ in range(R)]


def _within_least_limit(run, refused: str) -> None:
    """``run()`` is refused within 40 MB left (its message containing ``refused``), and a limit
    a little above the least one the refusal names holds its peak (the same numbers as free).
    """
    import gc

    import numpy as np

    import bayes_risk as br

    free = run()
    gc.collect()
    with br.memory_limit(_room_left(40 * 10**6)), pytest.raises(ValidationError) as err:
        run()
    assert err.value.code == "MEMORY_TOO_LARGE"
    assert refused in str(err.value)
    need = re.search(r"at least ([\d.]+) ([kMG]B)", str(err.value))
    # a little above it: the refused run leaves the allocator a few MB more resident
    limit = int(1.05 * _memory.parse_memory(need.group(1) + need.group(2)))
    del free
    gc.collect()
    _reset_peak()
    with br.memory_limit(limit):
        res = run()
    peak = _peak_resident()
    assert peak <= limit, f"peak {peak / 1e6:.0f} MB above the limit {limit / 1e6:.0f} MB"
    again = run()
    for a, b in zip(res if isinstance(res, tuple) else (res,),
                    again if isinstance(again, tuple) else (again,), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak resident memory")
def test_per_dataset_identification_checks_its_tables_first():
    """50,000 targets x 20 datasets: the per-dataset tables (about 64 MB) and the two
    matching indexes being built are checked first."""
    import warnings

    y, syn = _per_dataset_problem()

    def per_dataset(release=syn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NO_MATCH of a few targets
            res = _identify(y, release, aggregation="per_dataset")
        return res.c, res.IR, res.T

    per_dataset(syn[:4])  # the compiled kernels loaded
    _within_least_limit(per_dataset, "per-dataset tables of 50,000 targets x 20 datasets")


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK),
                    reason="needs Linux's resettable peak resident memory")
def test_radius_sweep_checks_the_indexes_it_keeps_and_drops_each_result():
    """The per-dataset radius sweep keeps the replicates' indexes for its next radius (counted
    in the check) and no radius's tables while the next one runs."""
    import warnings

    import bayes_risk as br

    y, syn = _per_dataset_problem()

    def sweep(release=syn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return br.radius_sweep(y, release, known=["region", "size", "income"],
                                   synthesized=["income"], radii=[0.02, 0.05, 0.1],
                                   categorical=["region", "size"], progressbar=False).risk

    sweep(syn[:4])
    _within_least_limit(sweep, "per-dataset tables of 50,000 targets x 20 datasets")


def test_pooled_identification_sets_aside_the_probabilities_it_keeps():
    """The pooled probabilities kept (7.4 million entries here) were not set aside when the
    chunks were sized from what was left: 1,630 MB peak under the least limit named, 1,470 MB.
    The same risks and probabilities as without a limit."""
    import warnings

    import numpy as np
    import pandas as pd

    import bayes_risk as br

    rng = np.random.default_rng(0)
    n = 12000
    y = pd.DataFrame({"region": rng.integers(0, 2, n), "size": np.zeros(n, dtype=np.int64),
                      "income": rng.lognormal(10, 1.0, n).round(0)})
    syn = [y.assign(income=(y["income"] * rng.lognormal(0, 0.1, n)).round(0)) for _ in range(3)]

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = br.identification_risk(
                y, syn, known=["region", "size", "income"], synthesized=["income"],
                categorical=["region", "size"], match=br.MatchSpec(radius={"income": 0.1}),
                progressbar=False)
        return res.IR, res.c, res.pooled.explicit.toarray()[:50]

    _within_least_limit(run, "the pooled match probabilities")


#: ``bayes-risk ARGV`` that prints its peak resident memory (kB) last on stderr: the child's
#: own, as ``ru_maxrss`` is not (Linux counts in it the parent's resident memory at the fork)
_PEAK_REPORTING_CLI = """import atexit, sys
def peak():
    with open("/proc/self/status") as fh:
        print(next(x for x in fh if x.startswith("VmHWM:")).split()[1], file=sys.stderr)
atexit.register(peak)
from bayes_risk.cli import console_main
sys.exit(console_main())
"""


def _command_within_least_limit(argv: list[str], cwd, refused: str) -> None:
    """``bayes-risk ARGV`` in a fresh interpreter (what a run loads after its check counts only
    there): refused under 1 MB with a message containing ``refused``, then run within the least
    limit the refusal names (2 % above it: the refused run's resident memory varies by about
    0.5 MB) with a peak within that limit."""
    import subprocess
    import sys

    def run(limit: str) -> tuple[int, str, int]:
        out = subprocess.run([sys.executable, "-c", _PEAK_REPORTING_CLI, *argv, "--memory",
                              limit], cwd=cwd, capture_output=True, text=True, check=False)
        err, _, peak = out.stderr.rstrip().rpartition("\n")
        return out.returncode, err, int(peak) * 1024

    rc, err, _ = run("1MB")
    assert rc != 0 and "[MEMORY_TOO_LARGE]" in err and refused in err, err
    need = re.search(r"at least ([\d.]+) ([kMG]B)", err)
    limit = int(1.02 * _memory.parse_memory(need.group(1) + need.group(2)))
    rc, err, peak = run(str(limit))
    assert rc == 0, err
    assert peak <= limit, f"peak {peak / 1e6:.0f} MB above the limit {limit / 1e6:.0f} MB"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's VmHWM")
def test_fit_stays_within_the_least_limit_its_check_names(tmp_path, cli):
    """A DPMPM fit loads numba, its kernels and the NetCDF writer after the command read its
    data: about 245 MB that the least limit its check named did not count (181 MB named, 435 MB
    peak on 2,000 ACS-like records). The same draws as without a limit."""
    import numpy as np
    import xarray as xr

    import bayes_risk as br

    br.make_acs_like(300, random_seed=1).to_csv(tmp_path / "acs.csv", index=False)
    argv = ["fit", "acs.csv", "--method", "dpmpm", "--components", "5", "--draws", "20",
            "--tune", "10", "--chains", "1", "--random-seed", "1", "--quiet", "--out"]
    _command_within_least_limit([*argv, "model"], tmp_path, "the posterior draws")
    assert cli([*argv, "free"], tmp_path).returncode == 0
    with xr.open_datatree(tmp_path / "model" / "posterior.nc") as a, \
            xr.open_datatree(tmp_path / "free" / "posterior.nc") as b:
        for v in a["posterior"].data_vars:
            np.testing.assert_array_equal(a["posterior"][v].values, b["posterior"][v].values)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's VmHWM")
@pytest.mark.parametrize("n, m, method",
                         [(5000, 20, ["cart"]), (1000, 5, ["rf", "--n-trees", "100"])],
                         ids=["cart", "rf"])
def test_synthesize_stays_within_the_least_limit_its_check_names(tmp_path, cli, n, m, method):
    """CART loads scikit-learn and pyarrow after the check, and fits and holds more than 8 bytes
    a cell of each dataset (182 MB named, 270 MB peak on 5,000 CE-like records, m = 20); the
    forests' trees were not counted (1.4 MB named, 1.2 GB beyond it on 5,000 CE-like records
    with 500 trees; 28 MB beyond with 1,000 records and 100 trees). The same datasets as
    without a limit."""
    import pandas as pd

    import bayes_risk as br

    br.make_ce_like(n, random_seed=1).to_csv(tmp_path / "ce.csv", index=False)
    argv = ["synthesize", "ce.csv", "--method", *method, "--synthesize", "Income",
            "Expenditure", "Age", "-m", str(m), "--random-seed", "1", "--quiet", "--out"]
    _command_within_least_limit([*argv, "syn"], tmp_path,
                                f"{m} synthetic datasets of {n:,} records x 7 columns")
    assert cli([*argv, "free"], tmp_path).returncode == 0
    for f in sorted((tmp_path / "free").glob("*.parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "syn" / f.name),
                                      pd.read_parquet(f), check_exact=True)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's VmHWM")
def test_random_forest_fit_stays_within_the_least_limit(tmp_path, cli):
    """A random forest's fit was not checked (5,000 CE-like records, 300 trees: 1.08 GB peak
    under a limit of 1 MB). The same saved model as without a limit."""
    import numpy as np

    import bayes_risk as br

    br.make_ce_like(1000, random_seed=1).to_csv(tmp_path / "ce.csv", index=False)
    argv = ["fit", "ce.csv", "--method", "rf", "--n-trees", "100", "--synthesize", "Income",
            "Expenditure", "Age", "--random-seed", "1", "--quiet", "--out"]
    _command_within_least_limit([*argv, "model"], tmp_path,
                                "100 trees a forest of 1,000 records for 3 column(s)")
    assert cli([*argv, "free"], tmp_path).returncode == 0
    with np.load(tmp_path / "model" / "arrays.npz") as a, \
            np.load(tmp_path / "free" / "arrays.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's VmHWM")
def test_synthesize_from_a_saved_model_stays_within_the_least_limit(tmp_path, cli):
    """From a saved model the writing loads pyarrow after the check, and the synthesis's
    working arrays were not counted (269 MB named, 305 MB peak: a DPMPM of 20,000 records)."""
    import bayes_risk as br

    br.make_ce_like(5000, random_seed=1).to_csv(tmp_path / "ce.csv", index=False)
    assert cli(["fit", "ce.csv", "--method", "cart", "--synthesize", "Income", "Age", "--quiet",
                "--out", "model"], tmp_path).returncode == 0
    _command_within_least_limit(["synthesize", "--model", "model", "-m", "20", "--quiet",
                                 "--out", "syn"], tmp_path, "20 synthetic datasets of 5,000")
