"""Synthesis: sequential CART on CEdata (m = 20), CART on SD2011 with missing values, DPMPM fit
(and the default fit on the ACS extract and NYexample, with and without structural zeros),
sequential regressions on CEdata (m = 20). The whole ``bayes-risk synthesize`` and ``fit``
commands of the README's table against R are ``commands.VersusR``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

from bayes_risk.models import Sampling

from ._data import CATEGORICAL, SHARED_DATA, SYNTHESIZED, ce, nyexample


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


class CARTCEdata:
    """Scenario 4 of Hornby & Hu: Tenure, Expenditure, Income synthesized, m = 20 (goal < 20 s)."""

    params = (["bayes_bootstrap", "uniform"],)
    param_names = ["donor"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self, donor):
        from bayes_risk.data import infer_schema

        self.df = ce()
        self.schema = infer_schema(self.df, categorical=CATEGORICAL)
        # the synthpop-style variant pairs the uniform donor with synthpop's random descent
        self.settings = {} if donor == "bayes_bootstrap" else {
            "donor": "uniform", "unroutable": "random_descent"}

    def _fit(self):
        from bayes_risk.models import CARTSynthesizer

        return _quiet(CARTSynthesizer(**self.settings).fit, self.df, schema=self.schema,
                      synthesized=SYNTHESIZED, random_seed=1)

    def time_fit_synthesize(self, donor):
        self._fit().synthesize(20, random_seed=1)

    def peakmem_fit_synthesize(self, donor):
        self._fit().synthesize(20, random_seed=1)


class CARTMissingValues:
    """SD2011, synthpop's vignette columns, every column synthesized (m = 5): missing values
    (empty cells, income's -8 code) against the complete cases."""

    params = (["with missing values", "complete cases"],)
    param_names = ["table"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self, table):
        path = SHARED_DATA / "SD2011.csv"
        if not path.is_file():
            raise NotImplementedError("SD2011.csv of the shared data is needed")
        from bayes_risk.data import infer_schema, read_table
        from bayes_risk.data.missing import missing_mask

        cols = ["sex", "age", "edu", "marital", "income", "ls", "wkabint"]
        df = read_table(path)[cols]
        codes = {"income": [-8]}
        if table == "complete cases":
            miss = sum(missing_mask(df[c], codes.get(c, ())).astype(int) for c in cols) > 0
            df, codes = df[~miss].reset_index(drop=True), {}
        self.df = df
        self.schema = infer_schema(df, missing_codes=codes or None)

    def time_fit_synthesize(self, table):
        from bayes_risk.models import CARTSynthesizer

        model = _quiet(CARTSynthesizer().fit, self.df, schema=self.schema,
                       synthesized=list(self.df.columns), random_seed=0)
        model.synthesize(5, random_seed=0)


class SeqRegCEdata:
    """Sequential regressions on CEdata (households with positive income and expenditure):
    Tenure (categorical family), log expenditure and log income (normal, exact posterior)
    synthesized given Urban and Marital, released unchanged; ``synthesize(20)`` of the fitted
    chain (the fit is not timed). Columns as read from the CSV (integer-coded categoricals) or
    as pandas categoricals."""

    params = (["csv", "category"],)
    param_names = ["dtypes"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (3, 10, 60.0)
    timeout = 300

    def setup(self, dtypes):
        import numpy as np
        import pandas as pd

        from bayes_risk.data import infer_schema
        from bayes_risk.models import SequentialRegression

        raw = ce()
        raw = raw[(raw["Income"] > 0) & (raw["Expenditure"] > 0)].reset_index(drop=True)
        df = pd.DataFrame({"Urban": raw["Urban"], "Marital": raw["Marital"],
                           "Tenure": raw["Tenure"],
                           "LogExpenditure": np.log(raw["Expenditure"]),
                           "LogIncome": np.log(raw["Income"])})
        cat = ["Urban", "Marital", "Tenure"]
        if dtypes == "category":
            df[cat] = df[cat].astype("category")
        self.model = _quiet(
            SequentialRegression(families={"Tenure": "categorical"}, progressbar=False).fit,
            df, schema=infer_schema(df, categorical=cat),
            synthesized=["Tenure", "LogExpenditure", "LogIncome"], random_seed=1)

    def time_synthesize(self, dtypes):
        self.model.synthesize(20, random_seed=1)


class DPMPMFit:
    """Gibbs fit of a DPMPM: the ACS-like demo table (14 categorical columns), K = 20, one chain
    of 200 warm-up + 300 kept sweeps."""

    params = ([2000],)
    param_names = ["n"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 3, 120.0)
    timeout = 600

    def setup(self, n):
        from bayes_risk.data import make_acs_like

        self.df = make_acs_like(n, random_seed=2026)

    def _fit(self):
        from bayes_risk.models.dpmpm import DPMPM

        model = DPMPM(n_components=20,
                      sampling=Sampling(tune=200, draws=300, chains=1), progressbar=False)
        _quiet(model.fit, self.df, random_seed=2026)

    def time_fit(self, n):
        self._fit()

    def peakmem_fit(self, n):
        self._fit()


class DPMPMDefaultFit:
    """The default DPMPM fit (K = 80; two chains, in turn in this process so that their CPU is
    counted here) on the ACS extract ``ss16pusa_sample_zeros.csv`` (1,000 × 5) and on
    ``NYexample_X.csv`` (20,000 × 10): the chains started as before the overdispersed starts
    (``"spread"``, both with every class occupied) and as now (``"overdispersed"``: one with
    every class, one with three). ``track_sweep_ms`` is the fit's CPU milliseconds per sweep
    (over every chain's sweeps, warm-up and extension rounds included), the figure
    NPBayesImputeCat's per-sweep speed is compared with (0.30–0.36 ms per sweep at n = 1,000)."""

    params = (["ss16pusa_sample_zeros", "NYexample"], ["spread", "overdispersed"])
    param_names = ["data", "starts"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 2, 600.0)
    timeout = 1800

    FILES = {"ss16pusa_sample_zeros": "ss16pusa_sample_zeros.csv",
             "NYexample": "NYexample_X.csv"}

    def setup(self, data, starts):
        import pandas as pd

        path = SHARED_DATA / self.FILES[data]
        if not path.is_file():
            raise NotImplementedError(f"{path.name} of the shared data is needed")  # skipped
        self.df = pd.read_csv(path, dtype=str)

    def _fit(self, starts):
        from bayes_risk.models.dpmpm import DPMPM

        model = DPMPM(n_components=80, sampling=Sampling(starts=starts, cores=1), progressbar=False)
        return _quiet(model.fit, self.df, random_seed=1)

    def time_fit(self, data, starts):
        self._fit(starts)

    def track_sweep_ms(self, data, starts):
        t0 = time.process_time()
        model = self._fit(starts)
        run = model.convergence_summary()
        return 1000.0 * (time.process_time() - t0) / (run["chains"] * run["sweeps_per_chain"])

    track_sweep_ms.unit = "ms"


class DPMPMNYexample:
    """A DPMPM fit as NPBayesImputeCat's reference runs make it (K = 80, one chain of 1,000
    sweeps: 500 warm-up + 500 kept) on ``NYexample_X.csv`` (20,000 × 10), in a fresh process
    with one numba thread: its CPU seconds (user + system) and peak memory, the whole process
    as R's figures are (NPBayesImputeCat: 10.5 s, 136 MiB; issue 49)."""

    number = 1
    repeat = 1
    timeout = 600
    SCRIPT = (
        "import warnings, pandas as pd\n"
        "from bayes_risk.models import DPMPM, Sampling\n"
        "df = pd.read_csv({path!r}, dtype=str)\n"
        "warnings.simplefilter('ignore')\n"
        "DPMPM(n_components=80, progressbar=False, sampling=Sampling(\n"
        "      tune=500, draws=500, thin=1, max_sweeps=0, chains=1, cores=1),\n"
        "      ).fit(df, random_seed=1)\n"
    )

    def setup(self):
        self.path = SHARED_DATA / "NYexample_X.csv"
        if not self.path.is_file():
            raise NotImplementedError("NYexample_X.csv of the shared data is needed")  # skipped
        self._runs()  # the first run loads (or compiles) the cached kernels: not counted

    def _runs(self, n=1):
        """CPU seconds and peak MiB of ``n`` runs of the script (medians)."""
        env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
        cpu, mem = [], []
        for _ in range(n):
            proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT.format(path=str(self.path))],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status):
                raise RuntimeError(f"the fit exited with {os.waitstatus_to_exitcode(status)}")
            cpu.append(usage.ru_utime + usage.ru_stime)
            mem.append(usage.ru_maxrss / 1024)
        return sorted(cpu)[n // 2], sorted(mem)[n // 2]

    def track_process_cpu(self):
        return self._runs(3)[0]

    track_process_cpu.unit = "seconds"

    def track_process_peakmem(self):
        return self._runs(3)[1]

    track_process_peakmem.unit = "MiB"


class DPMPMStructuralZeros:
    """A DPMPM (K = 30, one chain of 500 + 500 sweeps) fitted to the ACS extract
    ``ss16pusa_sample_zeros.csv`` and to ``NYexample_X.csv``, without and with their tables of
    structural zeros (issue 16 item 2); ``track_impossible_share`` is the share of the records
    of m = 20 synthetic datasets that are impossible (0 with the zeros)."""

    params = (["ss16pusa_sample_zeros", "NYexample"], ["without", "with"])
    param_names = ["data", "zeros"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 2, 300.0)
    timeout = 1200

    FILES = {"ss16pusa_sample_zeros": ("ss16pusa_sample_zeros.csv", "ss16pusa_ds_MCZ.csv"),
             "NYexample": ("NYexample_X.csv", "NYexample_MCZ.csv")}

    def setup(self, data, zeros):
        import pandas as pd

        self.path, self.mcz = (SHARED_DATA / f for f in self.FILES[data])
        for path in (self.path, self.mcz):
            if not path.is_file():
                raise NotImplementedError(f"{path.name} of the shared data is needed")  # skipped
        self.df = pd.read_csv(self.path)

    def _fit(self, zeros):
        from bayes_risk.models.dpmpm import DPMPM

        model = DPMPM(n_components=30,
                      sampling=Sampling(tune=500, draws=500, chains=1), progressbar=False,
                      structural_zeros=self.mcz if zeros == "with" else None)
        return _quiet(model.fit, self.df, categorical=list(self.df.columns), random_seed=1)

    def time_fit(self, data, zeros):
        self._fit(zeros)

    def peakmem_fit(self, data, zeros):
        self._fit(zeros)

    def track_impossible_share(self, data, zeros):
        import numpy as np

        from bayes_risk.models.dpmpm.coding import encode
        from bayes_risk.models.dpmpm.zeros import StructuralZeros, read_structural_zeros

        model = self._fit(zeros)
        table = StructuralZeros(read_structural_zeros(self.mcz), model.schema_.names,
                                [c.levels for c in model.schema_])
        return float(np.mean([table.contains(encode(model.schema_, s)).mean()
                              for s in model.synthesize(20, random_seed=2)]))

    track_impossible_share.unit = "share"


class DPMPMSweep:
    """One DPMPM Gibbs sweep after the warm-up, the step alone (``DPMPMGibbs``; no driver):
    tables of 25 records (3 columns, K = 2) and 20 records (2 binary columns, K = 3), the sizes
    of the ground-truth tests, where the sweep's Python and dispatch overhead is most of its
    time, and CEdata's four categorical columns (n = 5,571, K = 50). ``time_sweeps`` runs 1,000
    sweeps (CEdata: 100)."""

    params = (["25 records", "20 records", "CEdata"],)
    param_names = ["table"]
    number = 1
    timer = time.process_time  # CPU seconds of all threads: the machine may be shared
    repeat = (1, 5, 60.0)
    timeout = 300

    def setup(self, table):
        import numpy as np

        from bayes_risk.models.dpmpm.run import gibbs_layout
        from bayes_risk.models.dpmpm.step import DPMPMGibbs

        if table == "25 records":
            rng = np.random.default_rng(0)
            codes = np.column_stack([rng.integers(0, d, 25) for d in (2, 3, 2)])
            K, self.sweeps = 2, 1000
        elif table == "20 records":
            codes = np.random.default_rng(0).integers(0, 2, size=(20, 2))
            K, self.sweeps = 3, 1000
        else:
            df = ce()[["Urban", "Tenure", "Educ", "Marital"]]
            codes = np.column_stack([df[c].astype("category").cat.codes for c in df.columns])
            K, self.sweeps = 50, 100
        codes = codes.astype(np.int64)
        d = codes.max(axis=0) + 1
        self.step = DPMPMGibbs(list(gibbs_layout(K, d).shapes), codes=codes, d=d,
                               n_components=K, alpha_prior=(0.25, 0.25), dirichlet_prior=1.0)
        warmup = 200
        self.step.setup_chain(np.random.default_rng(1), warmup, self.sweeps)
        self.point = {"alpha": np.asarray(1.0)}
        for _ in range(warmup):  # the warm-up's moves are more, and not what is timed
            self.point = self.step.step(self.point)[0]

    def time_sweeps(self, table):
        point = self.point
        for _ in range(self.sweeps):
            point = self.step.step(point)[0]


class DPMPMSweepScaling:
    """CPU milliseconds of one DPMPM Gibbs sweep after the warm-up (``DPMPMGibbs``, the step
    alone, one numba thread), K = 40, on ``NYexample_X.csv``'s rows drawn with replacement
    (seed n) to n = 10³, 10⁴, 10⁵ records, missing cells imputed in the sweep: issue 69's
    comparison with NPBayesImputeCat per sweep (same tables, ``Run`` timed after 50 sweeps;
    the benchmarks README)."""

    params = ([1_000, 10_000, 100_000],)
    param_names = ["n"]
    number = 1
    repeat = 1
    timeout = 600

    def setup(self, n):
        import numba
        import numpy as np
        import pandas as pd

        from bayes_risk.models.dpmpm.run import gibbs_layout
        from bayes_risk.models.dpmpm.step import DPMPMGibbs

        df = nyexample()
        df = df.iloc[np.random.default_rng(n).integers(0, len(df), n)]
        codes = np.stack([pd.Categorical(df[c]).codes for c in df.columns], 1).astype(np.int64)
        d = np.array([df[c].nunique() for c in df.columns], dtype=np.int64)
        numba.set_num_threads(1)
        self.step = DPMPMGibbs(list(gibbs_layout(40, d).shapes), codes=codes, d=d,
                               n_components=40, alpha_prior=(0.25, 0.25), dirichlet_prior=1.0)
        self.sweeps = int(np.clip(2_000_000 // n, 60, 2_000))
        self.step.setup_chain(np.random.default_rng(1), 50, self.sweeps)
        self.point = {"alpha": np.asarray(1.0)}
        for _ in range(50):  # the warm-up's moves are more, and not what is timed
            self.point = self.step.step(self.point)[0]

    def track_sweep_ms(self, n):
        point = self.point
        start = time.process_time()
        for _ in range(self.sweeps):
            point = self.step.step(point)[0]
        return 1e3 * (time.process_time() - start) / self.sweeps

    track_sweep_ms.unit = "ms"


class DPMPMRegimeEvidence:
    """The evidence pass of a DPMPM fit whose chains disagree (``models.dpmpm.evidence``: 100 +
    300 + 300 collapsed Gibbs sweeps of the partition posterior) on ``NYexample_X.csv``, started
    from the classes of a blocked Gibbs chain after 300 sweeps from three classes and from
    every class (issue 72): CPU seconds of each pass and the margin between the bounds."""

    params = (["few", "spread"],)
    param_names = ["start"]
    number = 1
    repeat = 1
    timeout = 900

    def setup(self, start):
        import numpy as np

        from bayes_risk.models.dpmpm import DPMPM, coding
        from bayes_risk.models.dpmpm.evidence import _last_draw, classes_given_draw

        df = nyexample()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DPMPM(n_components=80,
                          sampling=Sampling(tune=200, draws=100, max_sweeps=0, chains=1, cores=1,
                          starts=start), progressbar=False).fit(df, random_seed=1)
        self.codes = coding.encode(model.schema_, df)
        self.d = np.array([len(c.levels) for c in model.schema_], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(self.d)[:-1]]).astype(np.int64)
        self.z = classes_given_draw(self.codes, offsets,
                                    *_last_draw(model.posterior_["posterior"], 0, self.d),
                                    np.random.default_rng(2))

    def _pass(self):
        from bayes_risk.models.dpmpm.evidence import partition_evidence

        start = time.process_time()
        out = partition_evidence(self.codes, self.d, self.z, alpha_prior=(0.25, 0.25),
                                 dirichlet_prior=1.0, random_seed=3)
        return time.process_time() - start, out

    def track_pass_cpu(self, start):
        return self._pass()[0]

    track_pass_cpu.unit = "seconds"

    def track_bound_gap(self, start):
        out = self._pass()[1]
        return out["upper"] - out["lower"]

    track_bound_gap.unit = "nats"
