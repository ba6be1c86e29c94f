"""Audits at any size: sufficient statistics per group in one streaming pass.

>>> from fairprobe.scale import CountSpec, count
>>> spec = CountSpec(group_cols=("sex", "race"), y_pred="p", y_true="y")
>>> counts = count("logs/", spec)                  # a file, a directory, a glob or a frame
>>> frame = counts.frame(min_group_size=1)          # an AuditFrame, without the rows
>>> counts = counts.update("logs/2024-06-02.parquet")     # add a batch; .merge, .save, .load

Engines: DuckDB (default when installed; ``pip install 'fairprobe[scale]'``), pandas (in
memory, the light core), Dask (``engine="dask"``, a ``LocalCluster`` or a scheduler address).
The anytime-valid monitor over time windows is :mod:`fairprobe.scale.monitor`. See
``docs/scale.md``.
"""

from fairprobe.scale.counts import COUNTS_SCHEMA, CountSpec, GroupCounts, sum_columns
from fairprobe.scale.engine import ENGINES, count, count_grouping_sets

__all__ = ["COUNTS_SCHEMA", "ENGINES", "CountSpec", "GroupCounts", "count",
           "count_grouping_sets", "sum_columns"]
