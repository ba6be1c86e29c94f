"""The assumptions under which each method's guarantee holds, as printed in a report.

One list per method, from the method's paper and docs/<method>.md; a result may add its own
(field ``assumptions``), which the report shows after these.
"""

from __future__ import annotations

__all__ = ["AUDIT", "COLLAB", "RADIUS", "SEQUENTIAL_ANYTIME", "SEQUENTIAL_GLR", "TWOSOURCE"]

AUDIT = [
    "The queried records are a random draw (seeded) from the query pool, and the pool represents "
    "the population the verdict is about.",
    "The model answers audit queries as it answers everyone else (it does not recognise the "
    "auditor); the two-source audit tests exactly this.",
    "The interval covers the metric at the stated level for independent answers (score / "
    "Newcombe intervals are approximate for small groups); unparsed answers are dropped, which is "
    "harmless only if they are unrelated to the group.",
    "The verdict is 'fair' or 'unfair' only if the whole interval lies on one side of the rule; "
    "otherwise it is 'undetermined'.",
]

SEQUENTIAL_GLR = [
    "Answers are independent draws from the population, in random order (a shuffled i.i.d. pool "
    "is).",
    "GLR test with Wald's boundaries: alpha and beta are operational targets, not guarantees; with "
    "composite hypotheses the error rates can exceed them (docs/sequential.md reports the measured "
    "rates). Use --test betting for a guarantee under optional stopping.",
    "The likelihood (Bernoulli for decisions, Gaussian for scores and logits) describes the "
    "answers.",
]

SEQUENTIAL_ANYTIME = [
    "Answers are independent draws from the population, in random order (a shuffled i.i.d. pool "
    "is).",
    "Anytime-valid test (Ville's inequality): P(declare violation) <= alpha when |gap| <= delta "
    "and P(declare compliance) <= beta when |gap| > delta, at any stopping time, for any budget, "
    "so the auditor may look after every answer and stop at will.",
]

RADIUS = [
    "The radius is about the audit data as given: the smallest reweighting of these records "
    "(divergence from the audit distribution) that flips the fair/unfair assessment; it does not "
    "include sampling error of the data themselves.",
    "Only shifts that reweight existing records are considered (no new records, no change of the "
    "model's answers); by Pinsker's inequality no event's probability moves by more than "
    "sqrt(KL/2) within the radius.",
]

TWOSOURCE = [
    "The user interface (source B) is truthful: it gives users the decisions the model makes; "
    "only the audit API (source A) may be manipulated.",
    "The proxy's accuracy p_phi is measured on the query pool and applies to the checked "
    "records; the default null ('agree') bounds the honest inconsistency rate from above for "
    "randomised proxies (docs/twosource.md).",
    "The false-alarm level alpha is split over the detectors (Bonferroni); n_max is Lemma 2's "
    "exact binomial bound, so an honest platform exceeds it with probability at most alpha.",
]

COLLAB = [
    "Honest auditors sample uniformly, independently, from their own fixed query sets of the "
    "same model; attackers may fabricate any statistics and coordinate.",
    "Auditopus weighs each increment of an auditor by (1 + S)^-2, S its suspicion score against "
    "that auditor's own earlier statistics (paper Section V-B); an empirical defence, not a "
    "proven bound: its error under attack is measured by `collab sweep` (attack success rate).",
    "The verdict is fair iff the final estimate of the demographic parity gap lies in the fair "
    "band [-tau, tau]; it is exact only once every honest auditor's statistics have arrived.",
]
