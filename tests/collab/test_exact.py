import numpy as np
import pytest

from fairprobe.collab.exact import max_mod_linear, min_mod_linear


def test_min_mod_linear_matches_enumeration() -> None:
    rng = np.random.default_rng(0)
    n = rng.integers(1, 400, 3000)
    m = rng.integers(1, 5000, 3000)
    a = rng.integers(-6000, 6000, 3000)
    b = rng.integers(-6000, 6000, 3000)
    got_min = min_mod_linear(n, m, a, b)
    got_max = max_mod_linear(n, m, a, b)
    for i in range(3000):
        s = (a[i] * np.arange(n[i]) + b[i]) % m[i]
        assert got_min[i] == s.min()
        assert got_max[i] == s.max()


@pytest.mark.parametrize(
    ("n", "m", "a", "b", "expected"),
    [
        (1, 7, 3, 5, 5),  # a single term
        (10, 1, 0, 0, 0),  # modulus 1
        (5, 10, 0, 4, 4),  # constant sequence
        (4, 10, 3, 2, 1),  # 2, 5, 8, 1
        (3, 10, 9, 5, 3),  # 5, 4, 3: falling
    ],
)
def test_min_mod_linear_pinned(n: int, m: int, a: int, b: int, expected: int) -> None:
    assert int(min_mod_linear(n, m, a, b)) == expected


def test_min_mod_linear_rejects_empty_range() -> None:
    with pytest.raises(ValueError):
        min_mod_linear(0, 5, 1, 1)
