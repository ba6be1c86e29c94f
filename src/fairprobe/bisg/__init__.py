"""Audits when race is not recorded: BISG/BIFSG proxies, weighted, bounded and BIRDiE estimates.

See ``docs/proxy.md``. :func:`fairprobe.bisg.tables.bisg_probabilities` computes the proxy;
:func:`fairprobe.bisg.estimate.proxy_audit` the three estimates and the verdict;
:func:`fairprobe.bisg.job.proxy_job` the document of ``fairprobe audit --predictions --proxy``.
"""
