"""Defaults shared by the library and the CLI, importable without numpy or pandas (building the
CLI's command tree must stay light: ``tests/cli/test_packaging.py``)."""

#: The one group-filtering rule's default, for the CLI and Python alike. 1: every group is
#: compared, as fairlearn's ``MetricFrame`` does, so the point estimates are fairlearn's; a small
#: group's interval is wide and makes a verdict ``undetermined`` with the reason, rather than being
#: left out. A larger value lists the groups (or, for one rate, a group's denominator, e.g. its
#: ``y_true = 1`` instances for TPR) below it and leaves them out of the summaries, and a
#: two-group question on one is ``undetermined`` with the reason.
DEFAULT_MIN_GROUP_SIZE = 1

#: The default platform on the Adult test split (docs/twosource.md): positive rates and the
#: unprivileged share, the planning rates of ``twosource`` and ``twosource plan``.
PLATFORM_RATE_FEMALE = 0.1205
PLATFORM_RATE_MALE = 0.4686
PLATFORM_SHARE_FEMALE = 0.333

#: The default construction of every two-group interval: coverage >= the level at every rate
#: and size (exact enumeration in ``docs/stats.md``); ``"score"``/``"newcombe"`` are narrower
#: but dip below it near rates 0 and 1.
DEFAULT_INTERVAL = "exact"
