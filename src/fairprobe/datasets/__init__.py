"""Bundled data: UCI Adult, first-name lists, query sets, and the Table I audit populations.

Names are imported lazily (PEP 562), so ``import fairprobe.datasets.names`` stays light (the
platform server starts without importing scipy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "ADULT_COLUMNS": "adult",
    "load_adult": "adult",
    "FEMALE_NAMES": "names",
    "MALE_NAMES": "names",
    "female_probability": "names",
    "infer_sex": "names",
    "sex_of_name": "names",
    "POPULATIONS": "populations",
    "Population": "populations",
    "get_population": "populations",
    "write_population_answers": "populations",
    "QuerySet": "queryset",
    "adult_queryset": "queryset",
    "load_queryset": "queryset",
}

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


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f"fairprobe.datasets.{_WHERE[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fairprobe.datasets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_WHERE))
