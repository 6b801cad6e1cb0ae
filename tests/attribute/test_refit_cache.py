"""The refit cache (``EstimatorSpec.refit_cache``, ``RatioSpec.refit_cache``): attribute risk and
membership risk on the same model, release and seed share their refits; a cached refit gives the
numbers the refit made in the run gives, bit for bit; a change of anything the refit depends on
misses the cache; a damaged entry is ignored with a warning and replaced."""

from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_risk import EstimatorSpec, RatioSpec, attribute_risk, membership_risk
from bayes_risk.exceptions import DataWarning, ValidationError, warning_code
from bayes_risk.models import DPMPM, Sampling


@pytest.fixture(scope="module")
def release():
    from bayes_risk.data import make_acs_like

    df = make_acs_like(150, random_seed=3)[["SEX", "MAR", "MIG"]]
    train, hold = df.iloc[:120].reset_index(drop=True), df.iloc[120:].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPMPM(n_components=4, sampling=Sampling(tune=40, draws=50, chains=2, cores=1),
                      progressbar=False).fit(train, random_seed=1)
        syn = model.synthesize(2, random_seed=2)
    return model, train, hold, syn


@pytest.fixture()
def refits(monkeypatch):
    """The refits made (``fit_augmented`` calls), counted."""
    made: list[int] = []
    fit_augmented = DPMPM.fit_augmented

    def counted(self, *args, **kwargs):
        made.append(1)
        return fit_augmented(self, *args, **kwargs)

    monkeypatch.setattr(DPMPM, "fit_augmented", counted)
    return made


def _attribute(release, seed=5, prior="uniform", **spec):
    m, train, _, syn = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attribute_risk(train, syn, model=m, random_seed=seed, progressbar=False,
                              prior=prior,
                              estimator=EstimatorSpec("stabilised", bootstrap=20, **spec))


def _membership(release, seed=5, model=None, syn=None, **spec):
    m, train, hold, syn0 = release
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return membership_risk(model or m, train, syn0 if syn is None else syn, holdout=hold,
                               random_seed=seed, progressbar=False, ratio=RatioSpec(**spec),
                               allow_other_model=model is not None)


def _same(a, b) -> None:
    """Every number of the two results equal (the run's timings apart)."""
    pd.testing.assert_frame_equal(a.records, b.records, check_exact=True)
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.get("settings", {}).pop("timing", None)
    assert json.dumps(da, sort_keys=True, default=str) == json.dumps(db, sort_keys=True,
                                                                      default=str)


def test_attribute_then_membership_share_refits_bit_for_bit(release, refits, tmp_path):
    """Without a cache each command refits the m = 2 datasets; with one, attribute risk stores
    its refits and membership risk reads them (no refit) and both give the same numbers as
    without the cache. Membership risk's own refits are attribute risk's: the same seeds."""
    a0, m0 = _attribute(release), _membership(release)
    assert len(refits) == 4
    refits.clear()
    a1 = _attribute(release, refit_cache=tmp_path)
    assert len(refits) == 2 and len(list(tmp_path.iterdir())) == 2
    refits.clear()
    m1 = _membership(release, refit_cache=tmp_path)
    assert refits == []
    _same(a0, a1)
    _same(m0, m1)
    a2 = _attribute(release, refit_cache=tmp_path)  # a second run of the same command
    assert refits == []
    _same(a0, a2)
    # what the intruder assumes does not enter the refits: another intruder prior reads them
    _attribute(release, refit_cache=tmp_path, prior="truth-weighted:2")
    assert refits == []


def test_a_change_of_what_the_refit_depends_on_misses_the_cache(release, refits, tmp_path):
    """Another seed, another release, a model with another prior, fewer kept draws: each its
    own refits (and entries)."""
    model, _, _, syn = release
    _membership(release, refit_cache=tmp_path)
    assert len(refits) == 2
    _membership(release, seed=6, refit_cache=tmp_path)
    assert len(refits) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other_release = model.synthesize(2, random_seed=9)
    _membership(release, syn=other_release, refit_cache=tmp_path)
    assert len(refits) == 6
    other_prior = copy.deepcopy(model)
    other_prior.alpha_prior = (2.0, 0.5)
    _membership(release, model=other_prior, refit_cache=tmp_path)
    assert len(refits) == 8
    _attribute(release, refit_cache=tmp_path, refit_draws=20)
    assert len(refits) == 10
    assert len(list(tmp_path.iterdir())) == 10
    _membership(release, refit_cache=tmp_path)  # the first again: all read
    assert len(refits) == 10


@pytest.mark.parametrize("damage", ["truncate", "drop_key", "edit_key"])
def test_a_damaged_entry_is_ignored_with_a_warning_and_replaced(release, refits, tmp_path,
                                                                damage):
    m0 = _membership(release, refit_cache=tmp_path)
    entry = sorted(tmp_path.iterdir())[0]
    if damage == "truncate":
        nc = entry / "model" / "posterior.nc"
        nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
    elif damage == "drop_key":
        (entry / "key.json").unlink()
    else:
        key = json.loads((entry / "key.json").read_text())
        key["seed"]["spawn_key"] = [7, 7]
        (entry / "key.json").write_text(json.dumps(key))
    refits.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m1 = membership_risk(release[0], release[1], release[3], holdout=release[2],
                             random_seed=5, progressbar=False,
                             ratio=RatioSpec(refit_cache=tmp_path))
    damaged = [w for w in caught if warning_code(w.message, w.category) == "REFIT_CACHE_DAMAGED"]
    assert len(damaged) == 1 and damaged[0].category is DataWarning
    assert entry.name in str(damaged[0].message)
    assert len(refits) == 1  # the damaged refit only, made again
    _same(m0, m1)
    refits.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # replaced: it verifies now
        _membership(release, refit_cache=tmp_path)
    assert refits == []


def test_an_interrupted_write_leaves_no_entry(release, refits, tmp_path, monkeypatch):
    """A write cut short (Ctrl-C while saving) leaves nothing that a later run reads."""
    def interrupted(self, path):
        (path).mkdir(parents=True)
        (path / "posterior.nc").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(DPMPM, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _membership(release, refit_cache=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_warns_and_the_run_goes_on(release, refits, tmp_path, monkeypatch):
    """Disk full while storing: warning REFIT_CACHE_UNWRITABLE, the refits made are used, no
    entry is left, and the numbers are those of a run without the cache."""
    import errno

    def full(self, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    plain = _membership(release)
    monkeypatch.setattr(DPMPM, "save", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = membership_risk(release[0], release[1], release[3], holdout=release[2],
                              random_seed=5, progressbar=False,
                              ratio=RatioSpec(refit_cache=tmp_path))
    codes = [warning_code(w.message, w.category) for w in caught]
    assert codes.count("REFIT_CACHE_UNWRITABLE") == 2  # one per refit (m = 2)
    assert list(tmp_path.iterdir()) == []
    _same(plain, res)


def test_refit_cache_refusals(release, tmp_path):
    model, train, hold, syn = release
    with pytest.raises(ValidationError, match="RatioSpec.refit_cache needs random_seed") as e:
        membership_risk(model, train, syn, holdout=hold, progressbar=False,
                        ratio=RatioSpec(refit_cache=tmp_path))
    assert e.value.code == "OPTION_REQUIRED"
    afile = tmp_path / "a_file"
    afile.write_text("")
    with pytest.raises(ValidationError, match="EstimatorSpec.refit_cache: .*cannot be used"):
        _attribute(release, refit_cache=afile)
    with pytest.raises(ValidationError, match="must be a folder path"):
        _attribute(release, refit_cache=3)


def test_a_refit_read_from_the_cache_is_the_refit_made(release, tmp_path):
    """``fit_refits`` reads what it stored: the same draws, and a model that saves again."""
    from bayes_risk.attribute.refits import fit_refits

    model, train, _, syn = release

    def seeds():
        return np.random.default_rng(5).spawn(1)[0].spawn(syn.m)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = fit_refits(model, train, syn.datasets, seeds(), cache=tmp_path)
        read = fit_refits(model, train, syn.datasets, seeds(), cache=tmp_path)
    for a, b in zip(made, read, strict=True):
        assert a is not b
        np.testing.assert_array_equal(a.record_loglik(train), b.record_loglik(train))
        b.save(tmp_path / "again" / str(id(b)))
