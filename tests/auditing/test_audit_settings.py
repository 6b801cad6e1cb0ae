"""AuditSettings checks what it can when it is built, before any data is read."""

import dataclasses

import numpy as np
import pytest

import bayes_risk as br
from bayes_risk.data import make_ce_like
from bayes_risk.exceptions import ValidationError


@pytest.mark.parametrize("sweep", [[0.1, -1], [-0.0001], ["a"], "0.1", [True], 5,
                                   [float("nan")], [float("inf")]])
def test_a_bad_sweep_is_refused_naming_it(sweep):
    with pytest.raises(ValidationError, match="sweep must be a sequence of radii") as err:
        br.AuditSettings(sweep=sweep)
    assert err.value.code == "INVALID_ARGUMENT"


def test_a_radius_listed_twice_is_named():
    with pytest.raises(ValidationError, match=r"sweep must be .*each listed once") as err:
        br.AuditSettings(sweep=[0.05, 0.1, 0.1])
    assert err.value.code == "INVALID_ARGUMENT"


def test_radii_are_stored_as_floats_and_none_skips_the_sweep():
    assert br.AuditSettings(sweep=np.array([0.05, 1])).sweep == (0.05, 1.0)
    assert br.AuditSettings().sweep == (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
    assert br.AuditSettings(sweep=[0.0, 0.1]).sweep == (0.0, 0.1)  # 0: exact matching
    assert br.AuditSettings(sweep=None).sweep is None
    # an empty grid, or exact matching alone, is no search: refused (issue 86; None skips it)
    for grid in ([], [0.0]):
        with pytest.raises(ValidationError, match="no radius above 0"):
            br.AuditSettings(sweep=grid)


def test_replace_checks_again_and_settings_are_frozen():
    s = br.AuditSettings(sweep=None)
    assert s.replace(sweep=[0.2]).sweep == (0.2,)
    with pytest.raises(ValidationError, match="sweep"):
        s.replace(sweep=[-0.2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.sweep = (0.1,)


def test_settings_of_another_type_are_refused():
    df = make_ce_like(20, random_seed=1)
    with pytest.raises(ValidationError, match="settings must be an AuditSettings"):
        br.audit(df, [df], known=["Age"], settings={"sweep": None}, progressbar=False)


def test_the_audits_plugin_replicates_help_says_the_membership_step_has_none():
    """``audit --plugin-replicates`` sets the attribute step's plug-in; the membership step's
    CART plug-in is exact (no replicates): the help says so beside the attribute command's."""
    from bayes_risk.cli import build_parser

    def option_help(command):
        sub = build_parser(command)._subparsers._group_actions[0].choices[command]
        return next(a.help for a in sub._actions if "--plugin-replicates" in a.option_strings)

    attribute, audit = option_help("attribute"), option_help("audit")
    assert audit.startswith(attribute)
    assert "membership step's has no replicates" in audit and "membership" not in attribute
