"""The bundled UCI Adult ("Census Income") data set, with first names added.

Source: UCI Machine Learning Repository, Becker & Kohavi (1996), https://doi.org/10.24432/C5XW20,
licensed CC BY 4.0 (see ``data/ATTRIBUTION.md``). The two files are shipped gzip-compressed and
unmodified; their uncompressed sha256 is checked on every load.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from functools import lru_cache
from importlib import resources

import numpy as np
import pandas as pd

from fairprobe._validation import check_choice, check_int
from fairprobe.datasets.names import FEMALE, FEMALE_NAMES, MALE, MALE_NAMES
from fairprobe.errors import DataError

# The feature lists are the data's, not the platform's: the platform's model, the query sets and
# the audit path all read them from here, so the data floor never imports the platform.
#: The features of the audit API, in model order.
AUDIT_FEATURES: tuple[str, ...] = (
    "age",
    "education-num",
    "race",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "sex",
)
#: Features of the user interface: the audit features without ``sex``, plus ``first_name``.
USER_FEATURES: tuple[str, ...] = tuple(f for f in AUDIT_FEATURES if f != "sex") + ("first_name",)

__all__ = ["ADULT_COLUMNS", "ADULT_SHA256", "ADULT_ROWS", "load_adult"]

ADULT_COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
)  # fmt: skip

#: sha256 of the uncompressed files, as published in ``shared/data/README.md``.
ADULT_SHA256: dict[str, str] = {
    "train": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
ADULT_ROWS: dict[str, int] = {"train": 32_561, "test": 16_281}
_FILES = {"train": "adult.data.gz", "test": "adult.test.gz"}
_SPLIT_INDEX = {"train": 0, "test": 1}
_INT_COLUMNS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


def _raw_bytes(split: str) -> bytes:
    try:
        packed = resources.files("fairprobe.datasets").joinpath("data", _FILES[split]).read_bytes()
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            f"The bundled Adult file {_FILES[split]} is missing; reinstall fairprobe."
        ) from exc
    try:
        raw = gzip.decompress(packed)
    except (OSError, EOFError) as exc:
        raise DataError(f"The bundled Adult file {_FILES[split]} is corrupt: {exc}.") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != ADULT_SHA256[split]:
        raise DataError(
            f"The bundled Adult file {_FILES[split]} has sha256 {digest}, expected "
            f"{ADULT_SHA256[split]}; reinstall fairprobe."
        )
    return raw


@lru_cache(maxsize=2)
def _load_split(split: str) -> pd.DataFrame:
    raw = _raw_bytes(split)
    df = pd.read_csv(
        io.BytesIO(raw),
        header=None,
        names=list(ADULT_COLUMNS),
        skipinitialspace=True,
        na_values=["?"],
        skiprows=1 if split == "test" else 0,  # the test file opens with a '|1x3 Cross validator'
        skip_blank_lines=True,
        dtype={c: "int64" for c in _INT_COLUMNS},
    )
    if len(df) != ADULT_ROWS[split]:
        raise DataError(f"Adult {split} split has {len(df)} rows, expected {ADULT_ROWS[split]}.")
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].str.strip()
    label = df["income"].str.rstrip(".")  # test labels end in a period
    bad = ~label.isin(["<=50K", ">50K"])
    if bad.any():
        raise DataError(f"Adult {split} split has unknown income labels {set(label[bad])}.")
    df["income"] = (label == ">50K").astype("int64")
    if not df["sex"].isin([FEMALE, MALE]).all():
        raise DataError(f"Adult {split} split has a sex value other than Female/Male.")
    return df


def _draw_names(sex: pd.Series, names_seed: int, split: str) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence([names_seed, _SPLIT_INDEX[split]]))
    idx = rng.integers(0, 25, size=len(sex))
    female = np.asarray(FEMALE_NAMES, dtype=object)[idx]
    male = np.asarray(MALE_NAMES, dtype=object)[idx]
    return np.where(sex.to_numpy() == FEMALE, female, male)


def load_adult(
    split: str = "train", names_seed: int | None = 0, *, dropna: bool = False
) -> pd.DataFrame:
    """Load the bundled UCI Adult data as a clean DataFrame.

    Parameters
    ----------
    split : {"train", "test", "all"}
        ``adult.data`` (32,561 rows), ``adult.test`` (16,281 rows) or both, train first (48,842
        rows, with a ``split`` column).
    names_seed : int or None, default 0
        Seed of the ``first_name`` column: each row gets one of the 25 names of its sex from the
        two-source paper's Appendix D, uniformly at random. The draw of each split uses its own
        stream (``SeedSequence([names_seed, 0 | 1])``), so ``"all"`` is exactly train then test.
        ``None`` omits the column.
    dropna : bool, default False
        Drop the rows with a missing value (``?`` in the file; workclass, occupation and
        native-country only).

    Returns
    -------
    pandas.DataFrame
        The 15 columns of ``adult.names`` (hyphenated names such as ``education-num``), values
        stripped of spaces, ``?`` as NaN, ``income`` as int 0/1 (1 for ``>50K``; the test split's
        trailing period removed), plus ``first_name`` (and ``split`` for ``"all"``).
    """
    check_choice(split, "split", "load_adult", ["train", "test", "all"])
    if names_seed is not None:
        names_seed = check_int(names_seed, "names_seed", "load_adult", lo=0)
    parts = ["train", "test"] if split == "all" else [split]
    frames = []
    for part in parts:
        df = _load_split(part).copy()
        if names_seed is not None:
            df["first_name"] = _draw_names(df["sex"], names_seed, part)
        if split == "all":
            df["split"] = part
        frames.append(df)
    out = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    if dropna:
        out = out.dropna(subset=list(ADULT_COLUMNS)).reset_index(drop=True)
    return out
