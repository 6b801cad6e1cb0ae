"""``bayes-risk remedy``: its arguments and its run (the runner's row)."""

from __future__ import annotations

import argparse
from typing import Any

from bayes_risk.cli._common import (
    add_format_argument,
    add_input_arguments,
    add_run_arguments,
)
from bayes_risk.cli._runner import Run
from bayes_risk.cli.parsers import add_argument_options, add_spec_options
from bayes_risk.disclosure.specs import SdcMicroSpec

__all__ = ["add_parser", "RUN"]

#: the remedies whose parameters' options the command takes
SDC, SDCMICRO = "bayes_risk.disclosure.sdc:sdc", "bayes_risk.disclosure.sdcmicro:sdcmicro"


#: remedy_run of ORIGINAL and SYN, the release saved in --format (ORIGINAL in another row order
#: is the release's: no remedy pairs a record with a row)
RUN = Run("bayes_risk.disclosure.remedy:remedy_run",
          specs={"sdcmicro_settings": SdcMicroSpec},
          argument_groups={"synthpop": SDC, "sdcmicro_options": SDCMICRO},
          reads=("random_seed",),
          save=lambda res, args, folder: res.save(folder, file_format=args.file_format),
          row_order=False)


_EPILOG = """\
examples:
  bayes-risk remedy CEdata.csv syn_cart/ --bottom-top Income=:200000 --out syn_coded
  bayes-risk remedy CEdata.csv syn_full/ --remove replicated-uniques \\
      --keys Age Urban Marital Income --out syn_no_repu
  bayes-risk remedy CEdata.csv syn_full/ --local-suppression Age Urban Marital --k 3 \\
      --pram Tenure --microaggregation Expenditure Income --random-seed 1 --out syn_sdcmicro
  bayes-risk audit CEdata.csv syn_coded/ --known Age Urban Marital --out audit_coded

outputs (--out, written atomically): the post-processed release, a SyntheticData folder like
the one 'bayes-risk synthesize' writes (syn_001.parquet ..., or --format's files, manifest.json);
the manifest keeps
the release's provenance and lists the post-processing in extra.post_processing (values coded
per column and dataset, records removed per dataset, columns smoothed; PRAM's transition
matrices and values changed, values suppressed per key, MDAV's groups, the noise's standard
deviations; never the seed, with which the noise could be drawn again and taken off).

order: synthpop's steps (coding, removal, smoothing), then sdcMicro's: PRAM, microaggregation,
noise, local suppression (last, so that the k-anonymity it reaches holds in the release).

audit it as any release: the release-only steps run on it; the model-based steps (attribute,
posterior identification, membership) are withheld with the reason, and a model given with it
is refused (MODEL_DIFFERS): its likelihood is that of the release before post-processing.
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``remedy`` sub-command."""
    p = subparsers.add_parser("remedy",
                              help="post-process a release as synthpop's sdc() (top and bottom "
                              "coding, removal of replicated uniques, smoothing) and sdcMicro's "
                              "remedies (PRAM, local suppression, microaggregation, noise)",
                              description="Apply synthpop's post-processing of a release "
                              "(sdc(); Nowok, Raab & Dibben 2016) before it goes out, in its "
                              "order: bottom and top coding of numeric columns, removal of the "
                              "synthetic records unique on the keys that replicate a unique "
                              "original record, smoothing of numeric columns; and sdcMicro's "
                              "(Templ, Kowarik & Meindl 2015): post-randomization, "
                              "microaggregation, noise addition and local suppression to "
                              "k-anonymity; and write the remedied release with its manifest, "
                              "to be audited again.",
                              epilog=_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_arguments(p, " (the uniques to remove are found against it)", recoded=True)
    # sdc's and sdcmicro's arguments and sdcmicro's settings, declared by the library
    add_argument_options(p, SDC, SDCMICRO)
    add_spec_options(p, SdcMicroSpec)
    add_format_argument(p)
    add_run_arguments(p, RUN,
                      "the post-processed release (a SyntheticData folder)",
                      check="SYN")
    return p
