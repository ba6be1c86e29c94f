"""The confusion-matrix rates FNR, TNR, NPV, FOR against scikit-learn's confusion_matrix."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from fairprobe.stats.frame import AuditFrame

# rate -> its value from (tn, fp, fn, tp)
_OWN = {
    "fnr": lambda tn, fp, fn, tp: fn / (fn + tp),
    "tnr": lambda tn, fp, fn, tp: tn / (tn + fp),
    "npv": lambda tn, fp, fn, tp: tn / (tn + fn),
    "for": lambda tn, fp, fn, tp: fn / (tn + fn),
}


@pytest.mark.parametrize("alias", sorted(_OWN))
def test_rate_gap_equals_confusion_matrix(alias: str) -> None:
    rng = np.random.default_rng(7)
    n = 4000
    g = rng.choice(["a", "b", "c"], n)
    y = rng.random(n) < 0.4
    p = rng.random(n) < np.where(g == "a", 0.3, 0.5)
    rates = []
    for lab in ("a", "b", "c"):
        m = g == lab
        tn, fp, fn, tp = confusion_matrix(y[m], p[m], labels=[False, True]).ravel()
        rates.append(_OWN[alias](tn, fp, fn, tp))
    s = AuditFrame(sensitive_features=g, y_true=y, y_pred=p).summary(alias)
    assert s.estimate == pytest.approx(max(rates) - min(rates), abs=1e-12)
    assert s.low <= s.estimate <= s.high
