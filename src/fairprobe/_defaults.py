"""Defaults shared by the library and the CLI, importable without numpy or pandas (building the
CLI's command tree must stay light: ``tests/cli/test_packaging.py``)."""

#: The one group-filtering rule's default, for the CLI and Python alike: a group (or, for one rate,
#: a group's denominator, e.g. its ``y_true = 1`` instances for TPR) below this is reported and
#: left out of the summaries, and a two-group question on it is ``undetermined`` with the reason.
#: ``min_group_size=1`` compares every group (fairlearn's ``MetricFrame`` behaviour).
DEFAULT_MIN_GROUP_SIZE = 20

#: The default platform on the Adult test split (docs/twosource.md): positive rates and the
#: unprivileged share, the planning rates of ``twosource`` and ``twosource plan``.
PLATFORM_RATE_FEMALE = 0.1205
PLATFORM_RATE_MALE = 0.4686
PLATFORM_SHARE_FEMALE = 0.333
