"""The audited platform: one model behind a truthful user interface and a fairwashable audit API.

``fairprobe platform serve`` runs it over HTTP (:mod:`fairprobe.platform.server`);
:class:`PlatformProcess` runs that as a subprocess. See ``docs/platform.md``.
"""

from fairprobe.platform.core import USER_FEATURES, Platform, Predictions
from fairprobe.platform.fairwash import FAIRWASH_MODES, FairwashConfig
from fairprobe.platform.model import (
    AUDIT_FEATURES,
    DEFAULT_MODEL_ID,
    PlatformModel,
    evaluate_model,
    train_default_model,
)
from fairprobe.platform.process import PlatformProcess

__all__ = [
    "AUDIT_FEATURES",
    "DEFAULT_MODEL_ID",
    "FAIRWASH_MODES",
    "USER_FEATURES",
    "FairwashConfig",
    "Platform",
    "PlatformModel",
    "PlatformProcess",
    "Predictions",
    "evaluate_model",
    "train_default_model",
]
