"""First-name lists and the name -> sex proxy of the two-source audit paper.

The lists are the top 25 given names per sex in Pennsylvania in 1990 (Barry III & Harper, 2000,
Table II), as printed in Appendix D of ``two-source-audits.md``. The proxy is the last-letter rule
of its Sections 3.3 and 5.1:

.. math::

    p(\\phi_{gender}(n) = Female) = 1 \\text{ if } n_{-1} \\in \\{a, e, i\\};\\quad
    1/2 \\text{ if } n_{-1} \\in \\{h, y\\};\\quad 0 \\text{ otherwise.}

On these 50 names the rule is right for 13 + 6/2 = 16 of 25 female names in expectation and for
19 + 4/2 = 21 of 25 male names (Joshua and Kyle end like female names; Lauren, Megan, Jennifer,
Rachel, Amber and Heather like male ones).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from fairprobe.errors import DataError

__all__ = [
    "FEMALE",
    "FEMALE_NAMES",
    "MALE",
    "MALE_NAMES",
    "female_probability",
    "hash_uniform",
    "infer_sex",
    "infer_sex_many",
    "sex_of_name",
]

FEMALE = "Female"
MALE = "Male"

FEMALE_NAMES: tuple[str, ...] = (
    "Ashley", "Jessica", "Amanda", "Brittany", "Samantha", "Sarah", "Lauren", "Nicole", "Megan",
    "Stephanie", "Emily", "Jennifer", "Elizabeth", "Kayla", "Rachel", "Amber", "Rebecca",
    "Danielle", "Chelsea", "Alyssa", "Melissa", "Heather", "Kelly", "Christina", "Michelle",
)  # fmt: skip

MALE_NAMES: tuple[str, ...] = (
    "Michael", "Matthew", "Christopher", "Joshua", "Andrew", "Joseph", "John", "Daniel", "David",
    "Robert", "James", "Justin", "Nicholas", "Anthony", "William", "Kyle", "Zachary", "Kevin",
    "Tyler", "Thomas", "Eric", "Brian", "Brandon", "Jonathan", "Timothy",
)  # fmt: skip

_FEMALE_ENDINGS = frozenset("aei")
_EITHER_ENDINGS = frozenset("hy")


def sex_of_name(name: str) -> str:
    """The sex a name has in the Appendix D lists (``"Female"`` or ``"Male"``).

    Raises :class:`~fairprobe.errors.DataError` for a name on neither list.
    """
    if name in FEMALE_NAMES:
        return FEMALE
    if name in MALE_NAMES:
        return MALE
    raise DataError(f"First name {name!r} is on neither name list of the two-source paper.")


def _last_letter(name: str) -> str:
    if not isinstance(name, str):
        raise DataError(f"A first name must be a string. Got {name!r} instead.")
    letters = [c for c in name.strip().lower() if c.isalpha()]
    if not letters:
        raise DataError(f"A first name must contain at least one letter. Got {name!r} instead.")
    return letters[-1]


def female_probability(name: str) -> float:
    """Probability that the last-letter proxy calls ``name`` female: 1, 1/2 or 0.

    Case and surrounding non-letters are ignored (``" Noah "`` ends in ``h``).
    """
    last = _last_letter(name)
    if last in _FEMALE_ENDINGS:
        return 1.0
    if last in _EITHER_ENDINGS:
        return 0.5
    return 0.0


def hash_uniform(key: str, seed: int, purpose: str) -> float:
    """A uniform number in [0, 1) fixed by ``(key, seed, purpose)``.

    ``blake2b(f"{purpose}|{seed}|{key}")``, first 8 bytes big-endian divided by ``2**64``. The same
    key always gets the same number in any process, so a repeated query gets the same answer.
    """
    digest = hashlib.blake2b(f"{purpose}|{seed}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def infer_sex(name: str, u: float) -> str:
    """Apply the proxy to ``name`` with the uniform draw ``u`` in [0, 1).

    Female iff ``u < female_probability(name)``: the 1/2 case is female when ``u < 0.5``.
    """
    return FEMALE if u < female_probability(name) else MALE


def infer_sex_many(
    names: Sequence[str] | Iterable[str], u: npt.ArrayLike
) -> npt.NDArray[np.object_]:
    """Vectorised :func:`infer_sex` over names and one uniform draw per name."""
    p = np.array([female_probability(n) for n in names], dtype=np.float64)
    uu = np.asarray(u, dtype=np.float64)
    if uu.shape != p.shape:
        raise DataError(f"Got {p.shape[0]} names but {uu.size} uniform draws.")
    return np.where(uu < p, FEMALE, MALE).astype(object)
