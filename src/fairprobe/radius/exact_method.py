"""Registers the exact solver under the name ``exact``."""

from __future__ import annotations

from typing import Any

from fairprobe.radius._data import AuditData
from fairprobe.radius.api import register_method
from fairprobe.radius.exact import exact_radius
from fairprobe.radius.result import RadiusResult


@register_method("exact")
def _exact(data: AuditData, tolerance: float, divergence: str, **options: Any) -> RadiusResult:
    return exact_radius(data, tolerance, divergence, **options)
