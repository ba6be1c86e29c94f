"""Bundled data: UCI Adult, first-name lists, query sets, and the Table I audit populations."""

from fairprobe.datasets.adult import ADULT_COLUMNS, load_adult
from fairprobe.datasets.names import (
    FEMALE_NAMES,
    MALE_NAMES,
    female_probability,
    infer_sex,
    sex_of_name,
)
from fairprobe.datasets.populations import POPULATIONS, Population, get_population

__all__ = [
    "ADULT_COLUMNS",
    "FEMALE_NAMES",
    "MALE_NAMES",
    "POPULATIONS",
    "Population",
    "female_probability",
    "get_population",
    "infer_sex",
    "load_adult",
    "sex_of_name",
]
