"""The networked auditor node of the collaborative audit.

Each auditor runs one node: an HTTP service that gossips signed counts vectors with its
neighbours and runs the sans-I/O protocol core of :mod:`fairprobe.collab` on what it receives.
See ``docs/collab-network.md``.
"""
