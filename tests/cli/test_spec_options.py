"""The options declared by spec fields (``cli_option`` metadata, issue 65): every field with an
option is an option of the sub-commands that take its spec, every spec option of a parser is a
field of a spec it takes, and the option's text gives the field's value."""

from __future__ import annotations

import argparse
import json

import pytest

from bayes_risk import cli
from bayes_risk._attack_specs import GuessSpec, PredicateSpec
from bayes_risk._sampling_spec import Sampling
from bayes_risk._search_spec import SearchSpec
from bayes_risk._specs import cli_fields, cli_specs, spec_values
from bayes_risk._utility_specs import OverlapSpec, PropensitySpec
from bayes_risk.attribute.specs import EstimatorSpec, ScenarioSpec
from bayes_risk.auditing.settings import AuditSettings
from bayes_risk.cli import build_parser
from bayes_risk.cli.design import space_from_args
from bayes_risk.cli.parsers import option_names
from bayes_risk.designing import DesignSpace
from bayes_risk.disclosure.specs import ExclusionSpec, SdcMicroSpec
from bayes_risk.identification.specs import MatchSpec, PopulationSpec
from bayes_risk.membership.specs import AttackSpec, RatioSpec

#: the spec classes each sub-command builds from its options
SPECS_OF = {"identification": (MatchSpec, PopulationSpec), "membership": (AttackSpec, RatioSpec),
            "attacks": (PredicateSpec, GuessSpec), "remedy": (SdcMicroSpec,),
            "attribute": (ScenarioSpec, EstimatorSpec), "utility": (PropensitySpec, OverlapSpec),
            "audit": (AuditSettings,), "fit": (Sampling,), "disclosure": (ExclusionSpec,),
            "design": (DesignSpace, SearchSpec)}
#: the fields of another spec a command declares alone (add_spec_options(fields=...))
FIELDS_OF = {"design": ((EstimatorSpec, ("plugin_replicates",)),
                        (AuditSettings, ("thresholds",))),  # the audit's, its help the design's
             "orders": ((MatchSpec, ("radius", "radius_type", "quantile_groups")),
                        (PopulationSpec, ("membership", "sampling_fraction")))}


def spec_options(spec: type) -> dict[str, str]:
    """The options a spec declares, by field (a field holding a spec: that spec's fields it
    takes, :func:`cli_spec`): ``{"EstimatorSpec.kind": "--attribute-estimator"}``."""
    out = {f"{spec.__name__}.{f.name}": opt.flag for f, opt in cli_fields(spec)}
    out.update({f"{inner.__name__}.{f.name}": opt.flag for _, inner, held in cli_specs(spec)
                for f, opt in held})
    return out


def spec_fields(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The options of ``parser`` declared by spec fields: ``{"MatchSpec.r_min": "--r-min"}``."""
    return {a.spec_field: a.option_strings[0] for a in parser._actions
            if getattr(a, "spec_field", None)}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return next(a for a in parser._actions
                if isinstance(a, argparse._SubParsersAction)).choices


def test_spec_fields_and_parsers_agree():
    subs = _subparsers()
    for name, parser in subs.items():
        declared = spec_fields(parser)
        expected = {k: v for spec in SPECS_OF.get(name, ()) for k, v in spec_options(spec).items()}
        # one field of another spec: the design's audits' --plugin-replicates
        expected |= {k: v for spec, names in FIELDS_OF.get(name, ())
                     for k, v in spec_options(spec).items() if k.split(".")[1] in names}
        assert declared == expected, name
        # a hand-written option does not shadow a spec's option
        hand = {o for a in parser._actions if not getattr(a, "spec_field", None)
                for o in a.option_strings}
        assert not hand & set(expected.values()), name
    # the identification options: 10 of MatchSpec, 10 of PopulationSpec, each named in
    # messages by its field (MatchSpec.r_min and r_min are --r-min)
    assert len(spec_fields(subs["identification"])) == 20
    names = option_names(subs["identification"])
    assert names["MatchSpec.r_min"] == names["r_min"] == "--r-min"
    assert names["PopulationSpec.population_size"] == "--n-pop"
    # a flag that turns a field off names it as itself: dcr=False is --no-dcr
    assert option_names(subs["membership"])["dcr"] == "--no-dcr"


@pytest.mark.parametrize("spec", [MatchSpec, PopulationSpec, EstimatorSpec, PropensitySpec,
                                  OverlapSpec])
def test_every_choice_is_a_value_of_the_field(spec):
    # the choices the option shows are the field's values with '-' for '_'
    for f, opt in cli_fields(spec):
        for choice in opt.choices or ():
            kw = {"membership": "unknown"} if f.name == "estimate" else {}
            assert getattr(spec(**{**kw, f.name: choice}), f.name) == choice


def test_the_options_text_gives_the_fields_value():
    ident = _subparsers()["identification"]
    args = ident.parse_args(["o.csv", "s.csv", "--radius-type", "quantile-sd", "--shape",
                             "legacy-hh-euclid", "--strategy", "threshold:0.3", "--n-pop", "500",
                             "--membership", "unknown", "--population-estimate",
                             "expected-inverse", "--out", "o"])
    match = MatchSpec(**spec_values(MatchSpec, vars(args)))
    assert (match.radius_type, match.shape, match.strategy) == (
        "quantile_sd", "legacy_hh_euclid", ("threshold", 0.3))
    assert match.quantile_groups == 20 and match.window is None  # not given: the defaults
    values = spec_values(PopulationSpec, vars(args))
    assert values == {"membership": "unknown", "estimate": "expected_inverse",
                      "population_size": 500}


def test_a_flag_and_a_number_or_name():
    args = _subparsers()["membership"].parse_args(["o.csv", "s.csv", "--model", "m", "--no-dcr",
                                                   "--prior", "0.2", "--out", "o"])
    assert AttackSpec(**spec_values(AttackSpec, vars(args))) == AttackSpec(prior=0.2, dcr=False)
    args = _subparsers()["membership"].parse_args(["o.csv", "s.csv", "--model", "m", "--prior",
                                                   "sampling", "--population-size", "9",
                                                   "--out", "o"])
    assert spec_values(AttackSpec, vars(args)) == {"prior": "sampling", "population_size": 9}


def test_a_flag_that_sets_a_field_on():
    attribute = _subparsers()["attribute"]
    args = attribute.parse_args(["o.csv", "s.csv", "--psis", "--khat", "base", "--out", "o"])
    assert EstimatorSpec(**spec_values(EstimatorSpec, vars(args))) == EstimatorSpec(
        psis=True, khat="base")
    args = attribute.parse_args(["o.csv", "s.csv", "--out", "o"])
    assert spec_values(EstimatorSpec, vars(args)) == {}  # every field at the spec's default


def test_the_utility_options_give_the_specs():
    # utility: PropensitySpec and OverlapSpec; audit: PropensitySpec (its intervals' rules are
    # AuditSettings.combining_rules)
    subs = _subparsers()
    args = subs["utility"].parse_args(["o.csv", "s.csv", "--pmse", "cart", "--max-order", "0",
                                       "--formula", "y ~ x", "z ~ x", "--combining-rules",
                                       "full-same-n", "--alpha", "0.1", "--out", "o"])
    assert PropensitySpec(**spec_values(PropensitySpec, vars(args))) == PropensitySpec(
        method="cart", max_order=0)
    assert OverlapSpec(**spec_values(OverlapSpec, vars(args))) == OverlapSpec(
        estimands=("y ~ x", "z ~ x"), rules="full-same-n", alpha=0.1)
    args = subs["audit"].parse_args(["o.csv", "s", "--known", "a", "--pmse", "cart",
                                     "--out", "o"])
    assert spec_values(AuditSettings, vars(args)) == {"propensity": PropensitySpec("cart")}
    assert option_names(subs["audit"])["PropensitySpec.max_order"] == "--max-order"
    assert option_names(subs["utility"])["OverlapSpec.rules"] == "--combining-rules"


def test_the_audit_options_give_its_settings():
    # AuditSettings declares the audit's settings; a field holding a spec takes some of its
    # fields' options, renamed (EstimatorSpec.kind is --attribute-estimator)
    audit = _subparsers()["audit"]
    args = audit.parse_args(["o.csv", "s", "--known", "a", "--radius-sweep", "0.1,0.5",
                             "--ngroups-target", "none", "--attribute-estimator", "is",
                             "--refit-cache", "c", "--plugin-replicates", "2000",
                             "--imputed", "none", "--linkability",
                             "a,b", "c", "--known-sweep", "--out", "o"])
    assert spec_values(AuditSettings, vars(args)) == {
        "sweep": [0.1, 0.5], "ngroups_target": None, "known_sweep": True,
        "attribute_estimator": EstimatorSpec("is", refit_cache="c", plugin_replicates=2000),
        "imputed": [],
        "linkability_columns": (["a", "b"], ["c"])}
    settings = AuditSettings(**spec_values(AuditSettings, vars(args)))
    assert settings.sweep == (0.1, 0.5) and settings.ngroups_target is None
    # nothing given: every field at its default
    args = audit.parse_args(["o.csv", "s", "--known", "a", "--out", "o"])
    assert spec_values(AuditSettings, vars(args)) == {}
    names = option_names(audit)
    assert names["EstimatorSpec.kind"] == names["kind"] == "--attribute-estimator"
    assert names["sweep"] == "--radius-sweep"
    assert option_names(_subparsers()["membership"])["RatioSpec.refit_cache"] == "--refit-cache"


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--ngroups-target", "1.5", "--ngroups-target must be an integer >= 2. Got '1.5'"),
    ("--radius-sweep", "0.1,x", "--radius-sweep must be a sequence of radii"),
    ("--refit-draws", "0", "--refit-draws must be an integer >= 1. Got 0"),
    ("--plugin-replicates", "0", "--plugin-replicates must be an integer >= 1. Got 0"),
    ("--plugin-replicates", "-1", "--plugin-replicates must be an integer >= 1. Got -1"),
])
def test_a_bad_audit_setting_names_its_option(option, value, message, capsys, tmp_path,
                                              monkeypatch):
    from bayes_risk.cli import _common

    # refused by the spec (exit 2, the option named), before any input is read
    monkeypatch.setattr(_common, "read_inputs", lambda args: pytest.fail("inputs read"))
    for name in ("o.csv", "s.csv"):
        (tmp_path / name).write_text("a\n1\n2\n")
    assert cli.main(["audit", str(tmp_path / "o.csv"), str(tmp_path / "s.csv"), "--known", "a",
                     option, value, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["1.5", "x"])
def test_a_replicates_count_not_an_integer_names_its_option(value, capsys):
    # refused by the parser (its type), for 'attribute' and 'audit' alike
    for argv in (["attribute", "o.csv", "s"], ["audit", "o.csv", "s", "--known", "a"]):
        with pytest.raises(SystemExit) as exit_:
            cli.main([*argv, "--plugin-replicates", value, "--out", "o"])
        assert exit_.value.code == 2
        assert f"--plugin-replicates: invalid int value: '{value}'" in capsys.readouterr().err


def test_the_design_options_give_the_search():
    design = _subparsers()["design"]
    args = design.parse_args(["o.csv", "--known", "a", "--objective", "s_pmse", "--patience",
                              "4", "--screen-records", "none", "--cpu-budget", "60", "--out", "o"])
    assert SearchSpec(**spec_values(SearchSpec, vars(args))) == SearchSpec(
        objective="s_pmse", patience=4, screen_records=None, cpu_budget=60.0)
    args = design.parse_args(["o.csv", "--known", "a", "--screen-records", "50", "--out", "o"])
    assert spec_values(SearchSpec, vars(args)) == {"screen_records": 50}
    # the audit's --plugin-replicates, declared by EstimatorSpec alone of its fields
    assert spec_values(EstimatorSpec, vars(args)) == {}
    args = design.parse_args(["o.csv", "--known", "a", "--plugin-replicates", "2000",
                              "--out", "o"])
    assert spec_values(EstimatorSpec, vars(args)) == {"plugin_replicates": 2000}
    assert option_names(design)["EstimatorSpec.plugin_replicates"] == "--plugin-replicates"


def test_the_design_passes_plugin_replicates_to_its_audits(capsys, tmp_path, monkeypatch):
    # every candidate's audit takes the replicates (the settings the journal records); a bad
    # count is refused before the original is read
    import bayes_risk.designing as designing

    seen = {}
    monkeypatch.setattr(designing, "design", lambda original, **kw: seen.update(kw) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cli.main(["design", str(tmp_path / "o.csv"), "--known", "a", "--plugin-replicates",
                  "2000", "--out", str(tmp_path / "d")])
    assert seen["settings"].attribute_estimator.plugin_replicates == 2000
    assert cli.main(["design", str(tmp_path / "missing.csv"), "--known", "a",
                     "--plugin-replicates", "0", "--out", str(tmp_path / "d2")]) == 2
    err = capsys.readouterr().err
    assert "--plugin-replicates must be an integer >= 1. Got 0" in err and "missing" not in err
    assert not (tmp_path / "d2").exists()


def test_the_design_options_give_the_space_over_its_file(tmp_path):
    # DesignSpace declares the space's options; given, they override --space's fields, the
    # mappings key by key (knobs method by method)
    design = _subparsers()["design"]
    args = design.parse_args(["o.csv", "--known", "a", "--columns", "A,B", "C", "-m", "2",
                              "--knob", "cart.min_leaf=5,20", "--fix", "columns=A,B",
                              "--exclude", "remedy=smooth", "--out", "o"])
    assert spec_values(DesignSpace, vars(args)) == {
        "columns": [["A", "B"], ["C"]], "m": [2], "knobs": {"cart": {"min_leaf": [5, 20]}},
        "fix": {"columns": ["A", "B"]}, "exclude": {"remedy": ["smooth"]}}
    (tmp_path / "space.json").write_text(json.dumps({
        "columns": [["Z"]], "methods": ["cart", "rf"],
        "knobs": {"cart": {"smoothing": [True]}, "rf": {"smoothing": [False]}},
        "fix": {"m": 5, "remedy": "none"}, "exclude": {"m": [1]}}))
    args = design.parse_args(["o.csv", "--known", "a", "--space", str(tmp_path / "space.json"),
                              "--columns", "A,B", "--knob", "cart.min_leaf=5",
                              "--fix", "m=2", "--out", "o"])
    assert space_from_args(args) == DesignSpace(
        columns=[["A", "B"]], methods=["cart", "rf"],
        knobs={"cart": {"smoothing": [True], "min_leaf": [5]}, "rf": {"smoothing": [False]}},
        fix={"m": 2, "remedy": "none"}, exclude={"m": [1]})


def test_the_fit_mcmc_options_give_the_sampling():
    # Sampling declares --draws, --tune, --chains and --cores (the model's defaults when not given)
    fit = _subparsers()["fit"]
    args = fit.parse_args(["o.csv", "--method", "dpmpm", "--draws", "200", "--chains", "3",
                           "--out", "o"])
    assert spec_values(Sampling, vars(args)) == {"draws": 200, "chains": 3}
    assert Sampling(**spec_values(Sampling, vars(args))) == Sampling(draws=200, chains=3)
    assert option_names(fit)["Sampling.draws"] == "--draws"


def test_the_disclosure_options_give_the_exclusions():
    # ExclusionSpec declares synthpop's conventions; a --no-... flag turns its field off
    disclosure = _subparsers()["disclosure"]
    args = disclosure.parse_args(["o.csv", "s.csv", "--keys", "a", "--target", "b",
                                  "--denom-lim", "3", "--no-keys-na", "--exclude-combination",
                                  "a", "1", "x", "--exclude-combination", "a", "2", "y",
                                  "--out", "o"])
    assert ExclusionSpec(**spec_values(ExclusionSpec, vars(args))) == ExclusionSpec(
        denom_lim=3, use_keys_na=False, exclude_combinations=[("a", "1", "x"), ("a", "2", "y")])
    names = option_names(disclosure)
    assert names["use_target_na"] == "--no-target-na"
    assert names["ExclusionSpec.exclude_combinations"] == "--exclude-combination"


def test_the_tree_models_options_are_declared_once():
    """fit, synthesize and orders take the tree models' options from one declaration
    (cli/options/trees.py, issue 65): every model option of synthesize and orders is an option
    of fit with the same setting (fit --method cart offered 4 of synthesize's before), orders has
    none that fixes a visit order, and each option is a setting of a built-in synthesizer that
    declares it (the specification's two options make the setting "spec" together)."""
    from bayes_risk.fit_options.trees import TREES
    from bayes_risk.models import get_synthesizer
    from bayes_risk.registry import setting_names

    subs = _subparsers()

    def model_options(name):
        return {a.option_strings[0]: a.library_names for a in subs[name]._actions
                if a.dest.startswith("model_opt_")}

    fit, syn, orders = (model_options(n) for n in ("fit", "synthesize", "orders"))
    for other in (syn, orders):
        assert other and all(fit[k] == v for k, v in other.items())
    assert {"--unroutable", "--bandwidth", "--method-per-column", "--n-jobs", "--tie"} <= set(fit)
    assert set(orders) == set(syn) - {"--identifying", "--threshold", "--tie",
                                      "--visit-sequence", "--method-per-column",
                                      "--predictor-matrix"}
    for name, options in TREES:
        params = setting_names(get_synthesizer(name))  # the tree options by name (TreeOptions)
        for setting in options:
            assert setting in params or (setting in ("method_per_column", "predictor_matrix")
                                         and "spec" in params), (name, setting)


def test_a_models_options_are_the_one_option_record():
    """A model's options are a table {setting: cli_option(...)} (issue 87): ModelOption makes an
    entry of it, with a plug-in's choices as spelled; the merge of several models' tables gives
    one option per flag, stored apart from a command's own options, read by argument_values."""
    from bayes_risk._specs import CliOption, argument_values
    from bayes_risk.exceptions import BayesRiskWarning, ValidationError
    from bayes_risk.registry import ModelOption, merge_options

    setting, meta = ModelOption("--mode", "mode", "the mode", {"choices": ["a_b", "c"]})
    assert setting == "mode" and isinstance(meta["cli"], CliOption)
    assert meta["cli"].argparse_keywords()["choices"] == ["a_b", "c"]  # as the plug-in spells
    with pytest.raises(ValidationError, match="'default' not taken") as err:
        ModelOption("--mode", "mode", "the mode", {"default": 1})
    assert err.value.code == "INVALID_ARGUMENT"

    mine = dict([(setting, meta), ModelOption("--size", "size", "its size", {"type": int})])
    theirs = {"mode": {"cli": CliOption("--mode", "how", choices=("c", "d"), dashes=False)},
              "other": {"cli": CliOption("--size", "clash")},  # --size, another setting
              "size": {"cli": CliOption("--bulk", "clash")}}  # size, another flag
    with pytest.warns(BayesRiskWarning) as caught:
        merged = merge_options([("mine", mine), ("theirs", theirs)])
    assert [str(w.message) for w in caught] == [
        "--size of 'theirs' is left out: mine declare(s) it with setting 'size' and other "
        "keywords.",
        "--bulk of 'theirs' is left out: mine declare(s) its setting 'size' as --size."]
    mode = merged["mode"]["cli"]
    assert (list(merged), merged["mode"]["models"]) == (["mode", "size"], ("mine", "theirs"))
    assert (mode.choices, mode.help, mode.dest) == (("a_b", "c", "d"), "mine: the mode; theirs: "
                                                    "how", "model_opt_mode")
    assert merged["size"]["cli"].usage == "--size VALUE"
    assert argument_values(merged, {"model_opt_mode": "a_b", "mode": "c",
                                    "model_opt_size": None}) == {"mode": "a_b"}


def test_model_option_values_in_either_spelling():
    """--donor takes bayes_bootstrap as bayes-bootstrap (the changelog's promise), DPMPM's
    --synthesis-mode its modes as the model spells them."""
    from bayes_risk._specs import argument_values
    from bayes_risk.fit_options.trees import tree_options
    from bayes_risk.models import DPMPM, CARTSynthesizer
    from bayes_risk.registry import fit_options, model_settings

    def parsed(command, *options):
        # the command line gives the model its options' values by their settings' names
        given = vars(build_parser(command).parse_args([command, "x.csv", "--out", "o", *options]))
        return argument_values(tree_options() if command == "synthesize" else fit_options(),
                               given)

    for given in ("bayes_bootstrap", "bayes-bootstrap"):
        assert model_settings(CARTSynthesizer, "cart", tree_options(),
                              parsed("synthesize", "--donor", given)) == {
            "donor": "bayes_bootstrap"}
    assert model_settings(DPMPM, "dpmpm", fit_options(),
                          parsed("fit", "--synthesis-mode", "conditional_us")) == {
        "synthesis_mode": "conditional_us"}
    with pytest.raises(SystemExit):
        parsed("fit", "--synthesis-mode", "conditional-us")


def test_options_that_are_no_table_are_left_out(tmp_path):
    """An entry point of bayes_risk.fit_options naming something else than a table of options
    (or a tuple of ModelOption entries) is left out with a warning, the others kept."""
    from bayes_risk.exceptions import BayesRiskWarning
    from bayes_risk.registry import fit_options
    from bayes_risk.testing import registered_synthesizer

    (tmp_path / "bad_options.py").write_text("OPTIONS = {'x': '--x'}\n")
    with registered_synthesizer("bad-options", "bayes_risk.models:DPMPM", path=tmp_path,
                                options="bad_options:OPTIONS"):
        with pytest.warns(BayesRiskWarning, match="'bad-options' .* left out: TypeError: not a "
                          "table"):
            options = fit_options()
    assert "x" not in options and options["n_components"]["models"] == ("dpmpm",
                                                                         "poisson-mixture")


@pytest.mark.parametrize("command", ["attribute", "audit"])
def test_a_replicates_count_below_one_names_its_option_before_any_input(command, capsys,
                                                                          tmp_path, monkeypatch):
    from bayes_risk.cli import _common

    # 'attribute' passed the count to the plug-in after reading the inputs, which named it
    # n_bootstrap; both commands now refuse it by its option, before any file is read
    monkeypatch.setattr(_common, "read_inputs", lambda args: pytest.fail("inputs read"))
    argv = [command, "o.csv", "s", *(["--known", "a"] if command == "audit" else [])]
    assert cli.main([*argv, "--plugin-replicates", "0", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "--plugin-replicates must be an integer >= 1. Got 0" in err and "n_bootstrap" not in err
    assert not (tmp_path / "out").exists()


#: a library module whose function declares an option on a parameter (one line of the
#: signature wrapped, as long help texts are)
_ANNOTATED_MODULE = '''"""A small library module."""

from __future__ import annotations

from typing import Annotated

from bayes_risk._constraints import Interval, checked
from bayes_risk._specs import cli_option

LIMIT = 7


def size_of(original, *,
            size: Annotated[int, cli_option(
                "--size", "the size of the thing, at least 1 (default 3)", type=int,
                metavar="N", group="sizes") | checked(Interval(int, 1))] = 3,
            plain: int = 0) -> int:
    """The size."""
    return size
'''


def test_a_parameters_option_is_read_off_the_signature(tmp_path, monkeypatch):
    """A function's option is declared on its parameter (``Annotated[T, cli_option(...)]``,
    issue 87): the parser declares it with its flag, help, metavar and group, read off the
    source without importing the module (``--help`` imports no numpy); the run passes it only
    when given (the function's default otherwise); the function checks it by the same
    declaration."""
    import sys

    from bayes_risk._constraints import Interval
    from bayes_risk._specs import argument_checks, argument_values, cli_arguments
    from bayes_risk.cli.parsers import add_argument_options

    (tmp_path / "optpkg").mkdir()
    (tmp_path / "optpkg" / "__init__.py").write_text("")
    (tmp_path / "optpkg" / "lib.py").write_text(_ANNOTATED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    function = "optpkg.lib:size_of"
    [(name, opt)] = cli_arguments(function)
    assert (name, opt.flag, opt.help, opt.metavar, opt.group) == (
        "size", "--size", "the size of the thing, at least 1 (default 3)", "N", "sizes")
    assert "optpkg.lib" not in sys.modules  # read off its source
    parser = argparse.ArgumentParser(prog="x")
    add_argument_options(parser, function)
    assert "sizes:\n  --size N    the size of the thing, at least 1 (default 3)" in (
        parser.format_help())
    assert argument_values(function, vars(parser.parse_args(["--size", "5"]))) == {"size": 5}
    assert argument_values(function, vars(parser.parse_args([]))) == {}  # its default, 3
    from optpkg.lib import size_of

    assert size_of(None, **argument_values(size_of, vars(parser.parse_args([])))) == 3
    assert [(n, o) for n, o in cli_arguments(size_of)] == [(name, opt)]  # once imported
    assert argument_checks(size_of) == {"size": Interval(int, 1)}
    with pytest.raises(AttributeError, match="'optpkg.lib' has no function 'nope'"):
        cli_arguments("optpkg.lib:nope")


def test_orders_takes_the_intruder_options_of_identification():
    # one declaration: --known-* of identification_risk (known = unsynthesized, then
    # synthesized), --radius ... of MatchSpec and PopulationSpec, --order of compare_visit_orders
    from bayes_risk._specs import argument_values
    from bayes_risk.cli.parsers import orders

    subs = _subparsers()
    args = subs["orders"].parse_args([
        "o.csv", "--method", "cart", "--order", "A, B", "--order", "B,A", "--known-unsynthesized",
        "C", "--radius", "C=0.1", "--membership", "unknown", "--sampling-fraction", "0.2",
        "--out", "o"])
    given = argument_values(orders.RUN.function, vars(args))
    assert given["orders"] == [["A", "B"], ["B", "A"]]
    assert orders._known(args, given) == ["C", "A", "B"]
    ident = orders._identification(args, given)
    assert ident["match"].radius == {"C": 0.1}
    assert (ident["population"].membership, ident["population"].sampling_fraction,
            ident["population"].counts) == ("unknown", 0.2, "loglinear_synthetic")
    ident = subs["identification"].parse_args(["o.csv", "s.csv", "--known-synthesized", "B",
                                               "--known-unsynthesized", "A", "--out", "o"])
    assert argument_values(orders.IDENTIFICATION_RISK, vars(ident)) == {
        "known": ["A", "B"], "synthesized": ["B"]}
    assert orders._identification(subs["orders"].parse_args(
        ["o.csv", "--method", "cart", "--order", "A", "--out", "o"]), given) == {}


def test_an_option_reused_by_another_command_keeps_its_declaration_and_its_help():
    """``design --threshold`` is the audit's option (``AuditSettings.thresholds``: flag, action
    and metavar declared once), with the design's help in the design's search group."""
    subs = _subparsers()
    audit, design = ({a.dest: a for a in subs[n]._actions} for n in ("audit", "design"))
    for attr in ("option_strings", "metavar", "spec_field", "default"):
        assert getattr(audit["threshold"], attr) == getattr(design["threshold"], attr), attr
    assert type(audit["threshold"]) is type(design["threshold"])  # action="append"
    assert design["threshold"].help.endswith("names and defaults: bayes-risk audit --help)")
    group = next(g for g in subs["design"]._action_groups
                 if design["threshold"] in g._group_actions)
    assert design["resume"] in group._group_actions  # the search's own group
