"""Bundled data: UCI Adult, first-name lists, query sets, and the Table I audit populations."""

from fairprobe.datasets.adult import ADULT_COLUMNS, load_adult
from fairprobe.datasets.names import (
    FEMALE_NAMES,
    MALE_NAMES,
    female_probability,
    infer_sex,
    sex_of_name,
)
from fairprobe.datasets.populations import (
    POPULATIONS,
    Population,
    get_population,
    write_population_answers,
)
from fairprobe.datasets.queryset import QuerySet, adult_queryset, load_queryset

__all__ = [
    "ADULT_COLUMNS",
    "FEMALE_NAMES",
    "MALE_NAMES",
    "POPULATIONS",
    "Population",
    "QuerySet",
    "adult_queryset",
    "female_probability",
    "get_population",
    "infer_sex",
    "load_adult",
    "load_queryset",
    "sex_of_name",
    "write_population_answers",
]
