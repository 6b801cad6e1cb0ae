"""Data layer: schema, validation and harmonisation, SyntheticData, readers, demo data."""

from bayes_risk.data.demo import (
    ACS_COLUMNS,
    ACS_LEVEL_COUNTS,
    load_demo,
    make_acs_like,
    make_ce_like,
)
from bayes_risk.data.io import read_table, write_table
from bayes_risk.data.levels import level_codes
from bayes_risk.data.normalise import SyntheticInput, as_synthetic_list, record_positions
from bayes_risk.data.schema import ColumnSpec, Schema, infer_schema
from bayes_risk.data.statfiles import FileLabels, file_labels
from bayes_risk.data.synthetic import SyntheticData, read_synthetic
from bayes_risk.data.validate import (
    check_m,
    check_probability,
    decode,
    encode,
    harmonise_levels,
    validate_synthetic,
    validate_table,
)

__all__ = [
    "ColumnSpec", "Schema", "infer_schema", "SyntheticData", "validate_table",
    "validate_synthetic", "harmonise_levels", "encode", "decode",
    "check_m", "check_probability",
    "as_synthetic_list", "SyntheticInput", "record_positions", "level_codes", "read_table",
    "write_table", "read_synthetic", "file_labels", "FileLabels", "make_ce_like", "make_acs_like",
    "load_demo", "ACS_COLUMNS", "ACS_LEVEL_COUNTS"
]
