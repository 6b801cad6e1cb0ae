"""Package layout, RNG conventions, numerics helpers, atomic IO and demo data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bayes_risk
from bayes_risk._io import atomic_dir, to_jsonable, write_json
from bayes_risk._numeric import logsumexp, normalise_log, ties
from bayes_risk._rng import as_generator, spawn
from bayes_risk.data import ACS_COLUMNS, ACS_LEVEL_COUNTS, make_acs_like, make_ce_like
from bayes_risk.exceptions import ValidationError

ROOT = Path(__file__).resolve().parent.parent



def _python(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter outside the checkout (the installed package)."""
    return subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                          cwd="/", check=True)

def test_import_does_not_import_pymc():
    code = (
        "import sys, bayes_risk, bayes_risk.data;"
        "assert 'pymc' not in sys.modules, 'pymc imported';"
        "assert 'bayes_risk.models' not in sys.modules;"
        "import bayes_risk.models as m; print(m.__file__)"
    )
    out = _python(code)
    assert out.stdout.strip().endswith(os.path.join("models", "__init__.py"))


def test_a_lazy_name_stays_the_function_once_its_submodule_is_imported():
    # disclosure.original_risk and disclosure.sdc are functions and modules of the same name:
    # a submodule imported first (by the top level's lazy names, or any other module) must not
    # replace the function that ``from bayes_risk.disclosure import original_risk`` gives
    code = (
        "import importlib, types;"
        "importlib.import_module('bayes_risk.disclosure.original_risk');"
        "importlib.import_module('bayes_risk.disclosure.sdc');"
        "from bayes_risk.disclosure import original_risk, sdc;"
        "assert not isinstance(original_risk, types.ModuleType), original_risk;"
        "assert not isinstance(sdc, types.ModuleType), sdc;"
        "from bayes_risk.disclosure.original_risk import OriginalRisk; print(OriginalRisk.__name__)"
    )
    assert _python(code).stdout.strip() == "OriginalRisk"


def test_source_tree_imports_models():
    """A script run from the repository root imports the checkout, whose models/ sits beside
    bayes_risk/: ``bayes_risk.models`` must still resolve (to the checkout's models/), and the
    installed layout must be untouched by the finder that makes this work."""
    code = (
        "import sys, bayes_risk;"
        "assert 'bayes_risk.models' not in sys.modules;"
        "import bayes_risk.models as m, bayes_risk.models.dpmpm.dpmpm as d;"
        "from bayes_risk.models import DPMPM;"
        "print(bayes_risk.__file__); print(m.__file__); print(d.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    pkg, models, dpmpm = out.stdout.split()
    assert Path(pkg).resolve() == ROOT / "bayes_risk" / "__init__.py"
    assert Path(models).resolve() == ROOT / "models" / "__init__.py"
    assert Path(dpmpm).resolve() == ROOT / "models" / "dpmpm" / "dpmpm.py"
    # installed layout (cwd outside the checkout): the wheel's own bayes_risk/models is used
    out = _python(code)
    pkg, models, _ = out.stdout.split()
    assert Path(models).parent == Path(pkg).parent / "models"


def test_import_does_not_import_dask():
    """Dask is an optional extra: only bayes_risk.distributed imports it, when it is used."""
    code = (
        "import sys, bayes_risk, bayes_risk.data, bayes_risk.distributed;"
        "bayes_risk.identification_risk; bayes_risk.attribute_risk;"
        "import bayes_risk.cli; bayes_risk.cli.build_parser();"
        "bad = [m for m in ('dask', 'distributed') if m in sys.modules];"
        "assert not bad, bad"
    )
    _python(code)


def test_utility_names_are_the_functions_and_cost_no_scipy():
    """``bayes_risk.utility.pmse`` is the function whatever was imported first (the module of
    the same name must not replace it), and the package imports no SciPy, which the measures
    that only read their inputs through it never use (issue 69)."""
    code = (
        "import sys, bayes_risk.utility;"
        "assert 'scipy.special' not in sys.modules, 'scipy.special';"
        "import bayes_risk.utility.pmse as m, bayes_risk.utility.summary;"
        "from bayes_risk.utility import pmse, utility_summary;"
        "assert callable(pmse) and callable(utility_summary), (pmse, utility_summary)"
    )
    _python(code)


def test_xarray_imports_no_dask_until_dask_is_imported():
    """``lean_xarray`` (issue 69): building a Dataset and writing NetCDF import neither dask
    nor dask.distributed (0.4-0.9 s of CPU) while dask is not imported; once it is, xarray
    knows dask arrays as before (chunks, the chunked-array check) and writes them."""
    pytest.importorskip("dask.array")
    pytest.importorskip("h5netcdf")
    code = (
        "import io, sys, numpy as np\n"
        "from bayes_risk._lazy import lean_xarray\n"
        "xr = lean_xarray()\n"
        "t = xr.DataTree.from_dict({'p': xr.Dataset({'x': ('a', np.arange(4.0))})})\n"
        "t.to_netcdf(io.BytesIO(), engine='h5netcdf')\n"
        "print(sorted(m for m in ('dask', 'dask.array', 'distributed') if m in sys.modules))\n"
        "import dask.array as da\n"
        "from xarray.namedarray.pycompat import is_chunked_array\n"
        "d = xr.Dataset({'x': ('a', da.arange(4.0, chunks=2))})\n"
        "b = io.BytesIO(); d.to_netcdf(b, engine='h5netcdf')\n"
        "back = xr.open_dataset(io.BytesIO(b.getvalue()), engine='h5netcdf').load()\n"
        "print(dict(d.chunks), is_chunked_array(d.x.data), back.x.values.tolist())\n"
    )
    out = _python(code)
    assert out.stdout.splitlines() == ["[]", "{'a': (2, 2)} True [0.0, 1.0, 2.0, 3.0]"], \
        out.stdout + out.stderr


def test_wheel_maps_models_into_bayes_risk(tmp_path):
    """A normal (non-editable) build places models/ at bayes_risk/models (STYLE.md §4)."""
    pytest.importorskip("setuptools")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (whl,) = tmp_path.glob("bayes_risk-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "bayes_risk/models/__init__.py" in names
    assert "bayes_risk/models/base.py" in names
    assert not any(n.startswith("models/") for n in names)
    pkgs = {n.split("/")[1] for n in names if n.startswith("bayes_risk/") and n.count("/") >= 2}
    # every sub-package folder of the source tree is in the wheel (setuptools drops unlisted ones)
    src = {p.name for p in (ROOT / "bayes_risk").iterdir() if (p / "__init__.py").exists()}
    assert src | {"models"} <= pkgs
    # models/ is a tree of family packages: the wheel holds exactly its modules, so a
    # sub-package left out of `packages` in pyproject.toml fails here
    wheel_models = {n.removeprefix("bayes_risk/models/") for n in names
                    if n.startswith("bayes_risk/models/")}
    assert wheel_models == _model_sources()
    # the licence the metadata names, as its text (issue 66: neither the repository nor the
    # wheel carried it)
    (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    z = zipfile.ZipFile(whl)
    assert z.read(licence) == (ROOT / "LICENSE").read_bytes()
    meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta


def test_licence_citation_and_release_agree():
    """What a methodologist checks before adopting the package (issue 66): the MIT licence
    that pyproject.toml names, as its text; a CITATION.cff whose version and release date are
    the package's and the changelog's newest release; "How to cite" in the README and the docs."""
    import datetime
    import re
    import tomllib

    yaml = pytest.importorskip("yaml")  # PyYAML: with the docs extra (myst-parser)

    import bayes_risk

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == project["version"] == bayes_risk.__version__
    changelog = (ROOT / "docs" / "changelog.md").read_text()
    released = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)$", changelog, re.M)
    assert released and released[0] == (cff["version"], str(cff["date-released"]))
    datetime.date.fromisoformat(released[0][1])
    assert {"title", "authors", "message"} <= set(cff) and len(cff["references"]) == 5
    for page in (ROOT / "README.md", ROOT / "docs" / "getting_started.md"):
        body = page.read_text()
        assert "## How to cite" in body and "CITATION.cff" in body, page


def _model_sources() -> set[str]:
    """Every module of the source tree's models/, as a path relative to models/."""
    return {p.relative_to(ROOT / "models").as_posix() for p in (ROOT / "models").rglob("*.py")}


def test_installed_models_match_the_source_tree():
    """The installed bayes_risk/models holds every module of models/ and nothing else (no
    sub-package dropped by setuptools, no stale module left from an earlier layout)."""
    out = subprocess.run(
        [sys.executable, "-P", "-c", "import bayes_risk.models as m; print(m.__file__)"],
        capture_output=True, text=True, cwd="/", check=True,
    )
    installed = Path(out.stdout.strip()).parent
    assert installed != ROOT / "models"  # the tests run against the installed package
    got = {p.relative_to(installed).as_posix() for p in installed.rglob("*")
           if p.is_file() and "__pycache__" not in p.parts}
    assert got == _model_sources()


def test_public_api_resolves():
    for name in bayes_risk.__all__:
        if name == "__version__":
            continue
        assert getattr(bayes_risk, name) is not None, name


def test_rng_conventions():
    a = as_generator(3).random(3)
    b = as_generator(3).random(3)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    with pytest.raises(ValidationError, match="RandomState"):
        as_generator(np.random.RandomState(1))
    with pytest.raises(ValidationError, match="Got 1.5"):
        as_generator(1.5)
    c1 = [r.random() for r in spawn(5, 4)]
    c2 = [r.random() for r in spawn(5, 4)][:2]
    assert c1[:2] == c2  # child k is the same stream whatever the number of children
    assert len(set(c1)) == 4


def test_log_space_normalisation():
    # SPEC §2.1 example: naive exp underflows to 0/0
    post = normalise_log(np.array([-1000.0, -1001.0, -1003.0]))
    np.testing.assert_allclose(post, [0.705385, 0.259496, 0.035119], atol=1e-6)
    assert np.all(np.isnan(normalise_log(np.full(3, -np.inf))))
    assert logsumexp(np.full(2, -np.inf)) == -np.inf
    assert ties(1 / 3 + 1 / 6, 1 / 2)
    assert not ties(0.5, 0.5 + 1e-6)


def test_atomic_dir_and_json(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_dir(tmp_path / "out") as d:
            (d / "a.txt").write_text("x")
            raise RuntimeError("fail")
    assert not (tmp_path / "out").exists()
    write_json(tmp_path / "r.json", {"a": np.float64(np.nan), "b": np.arange(3), "c": np.inf})
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": None, "b": [0, 1, 2], "c": "inf"}
    assert to_jsonable(np.int64(3)) == 3


@pytest.mark.parametrize("where", ["after_mkdir", "in_block"])
def test_interrupt_while_the_temporary_folder_is_made_leaves_nothing(tmp_path, monkeypatch,
                                                                     where):
    """Ctrl-C the moment the temporary folder exists (before the block that would remove it
    was entered, with ``tempfile.mkdtemp``) or inside the block: nothing is left beside the
    output, for ``atomic_dir`` and the command line's output folder alike."""
    import bayes_risk._io as bio
    from bayes_risk.cli import _run

    if where == "after_mkdir":
        def interrupted(path, *, folder):
            raise KeyboardInterrupt
        monkeypatch.setattr(bio, "_as_created", interrupted)
    for make in (lambda t: atomic_dir(t), lambda t: _run.output_dir(_Args(t))):
        target = tmp_path / "out"
        with pytest.raises(KeyboardInterrupt):
            with make(target):
                raise KeyboardInterrupt
        assert list(tmp_path.iterdir()) == []


class _Args:
    def __init__(self, out):
        self.out, self.command = str(out), "synthesize"


def _dead_pid() -> int:
    """The process id of a process that has ended (as a killed run's)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_every_temporary_left_by_a_killed_run_is_recognised(tmp_path):
    """What a killed run leaves beside --out: its temporary folder, the temporary that the
    audit's writer made beside that one (``..out.tmp-*.tmp-*``, left by a SIGKILLed
    ``audit --model``; it was not recognised) and a file's temporary. Those of a live process,
    and the temporaries of other outputs, stay."""
    from bayes_risk._io import remove_stale_siblings, temporary_name

    dead, me = _dead_pid(), os.getpid()
    target = tmp_path / "out"
    stale = [f".out.tmp-{dead}-ab12cd34", f"..out.tmp-{dead}-ab12cd34.tmp-{dead}-ef567890",
             f"...out.tmp-{dead}-a.tmp-{dead}-b.tmp-{dead}-c"]
    live = [f".out.tmp-{me}-11112222", f"..out.tmp-{me}-1.tmp-{dead}-2",
            f"..out.tmp-{dead}-1.tmp-{me}-2"]
    others = [f".outer.tmp-{dead}-1", f"..outer.tmp-{dead}-1.tmp-{dead}-2", f"out.tmp-{dead}-1",
              f".out.tmp-{dead}", ".out.tmp-x-1"]
    for name in stale + live + others:
        (tmp_path / name).mkdir()
        (tmp_path / name / "syn_001.csv").write_text("confidential")
    (tmp_path / f".out.tmp-{dead}-99887766").write_text("a file's temporary")
    removed, kept = remove_stale_siblings(target)
    assert sorted(removed) == sorted([*stale, f".out.tmp-{dead}-99887766"]) and kept == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(live + others)
    # the names the package makes are of that form
    name = temporary_name(target).name
    assert name.startswith(f".out.tmp-{me}-")


def test_writing_a_file_removes_the_temporary_a_killed_writer_left(tmp_path):
    dead = _dead_pid()
    left = tmp_path / f".r.json.tmp-{dead}-k9x2ab"
    left.write_text('{"half": ')
    write_json(tmp_path / "r.json", {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_scratch_folders_of_killed_processes_are_removed(tmp_path, monkeypatch):
    """The jackknife's spill folder lives in the system's temporary folder: one that a killed
    identification run left is removed by the next that makes one."""
    import tempfile

    from bayes_risk._io import scratch_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _dead_pid()
    (tmp_path / f"bayes-risk-jackknife-{dead}-abcd1234").mkdir()
    (tmp_path / f"bayes-risk-jackknife-{dead}-abcd1234" / "sums-1.npy").write_bytes(b"x")
    (tmp_path / f"bayes-risk-jackknife-{os.getpid()}-alive000").mkdir()
    (tmp_path / f"bayes-risk-other-{dead}-abcd1234").mkdir()
    new = Path(scratch_folder("jackknife"))
    assert new.parent == tmp_path and new.name.startswith(f"bayes-risk-jackknife-{os.getpid()}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [new.name, f"bayes-risk-jackknife-{os.getpid()}-alive000",
         f"bayes-risk-other-{dead}-abcd1234"])


def test_scratch_folders_read_the_temporary_folder_once(tmp_path, monkeypatch):
    """A shared /tmp holds tens of thousands of entries: reading it at every identification run
    with replicates cost 0.2 s of CPU each (35,000 entries). The dead processes' folders are
    removed at the first run of a process; later runs only make their own."""
    import tempfile

    from bayes_risk import _io

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    reads = []
    for name in ("scandir", "listdir"):
        real = getattr(os, name)

        def counted(path=".", _real=real):
            if not isinstance(path, int) and os.fspath(path) == str(tmp_path):
                reads.append(path)
            return _real(path)

        monkeypatch.setattr(_io.os, name, counted)
    made = [Path(_io.scratch_folder("jackknife")) for _ in range(3)]
    assert len(reads) == 1 and len(set(made)) == 3 and all(p.is_dir() for p in made)
    for p in made:
        _io.remove_scratch(str(p))


def test_demo_data_shapes_and_dependencies():
    ce = make_ce_like()
    assert ce.shape == (5571, 7)
    cols = ["Age", "Urban", "Tenure", "Educ", "Expenditure", "Marital", "Income"]
    assert list(ce.columns) == cols
    assert ce.Age.between(16, 88).all() and set(ce.Urban) == {1, 2}
    assert set(ce.Tenure) <= {1, 2, 4, 5, 6} and set(ce.Marital) <= {1, 2, 3, 4, 5}
    assert (ce.Income == 0).sum() > 0 and 0 < (ce.Income < 0).sum() < 0.02 * len(ce)
    assert (ce.Expenditure == 0).sum() > 0
    # household-survey dependencies: income rises with education; widowhood with age
    pos = ce.Income > 0
    assert np.corrcoef(ce.Educ[pos], np.log(ce.Income[pos]))[0, 1] > 0.1
    assert ce.Age[ce.Marital == 2].mean() > ce.Age[ce.Marital == 5].mean() + 15
    assert np.corrcoef(np.log1p(ce.Income.clip(0)), np.log1p(ce.Expenditure))[0, 1] > 0.2
    # fixed seed: identical on every call
    assert make_ce_like(100).equals(make_ce_like(100))


def test_acs_like_levels_and_latent_structure():
    acs, truth = make_acs_like(3000, return_truth=True)
    assert list(acs.columns) == list(ACS_COLUMNS)
    for c, d in zip(ACS_COLUMNS, ACS_LEVEL_COUNTS, strict=True):
        assert list(acs[c].cat.categories) == list(range(1, d + 1))
    # variables are dependent (latent classes): chi-square of a two-way table is large
    from scipy.stats import chi2_contingency

    tab = np.histogram2d(acs["RACE"].cat.codes, acs["BPL"].cat.codes, bins=(6, 7))[0]
    tab = tab[tab.sum(1) > 0][:, tab.sum(0) > 0]
    assert chi2_contingency(tab)[1] < 1e-6
    assert truth["pi"].shape == (10,) and len(truth["phi"]) == 14
    with pytest.raises(ValidationError, match="n must be an integer >= 10"):
        make_acs_like(5)
