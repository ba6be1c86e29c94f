"""Bundled data: UCI Adult, first-name lists, and the Table I audit populations."""

from fairprobe.datasets.populations import POPULATIONS, Population, get_population

__all__ = ["POPULATIONS", "Population", "get_population"]
