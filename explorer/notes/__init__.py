"""Every checkable claim of the five lecture notes, recomputed live: the one source of truth for every page.

A claim is a key (its text, place and one-line explanation are strings in locales/<lang>/notes.toml),
the notes file it comes from, and a check that recomputes it with attn_core. A check returns what the
notes print, the true value, a verdict and the numbers its explanation quotes:

    right    the statement holds: every printed digit is the true value rounded or cut, or an identity
             holds to floating-point rounding, or a measured value lies within 4 standard errors
    inexact  the idea holds but a printed number or a condition is off (close, or true only in a case)
    wrong    the statement is false as printed

One module per topic, each claim registered beside its check (registry.claim); rules holds how printed numbers,
identities and measurements are judged, samples the seeded draws. Pages that judge one of these claims
(saturation, masks, equivariance, worked example) read it here.
"""

from explorer.notes import cost, gradients, heads, masks, permutations, projections, scores, softmax, theory
from explorer.notes.projections import bilinear_facts, judge_projections
from explorer.notes.registry import FILES, VERDICTS, Claim, Result, check, check_claims, in_order
from explorer.notes.samples import SAMPLES

# The topic modules register their claims on import; the claims table shows the topics in this order.
TOPICS = (softmax, gradients, scores, permutations, masks, cost, heads, projections, theory)
CLAIMS: tuple[Claim, ...] = in_order([topic.__name__ for topic in TOPICS])

__all__ = [
    "CLAIMS",
    "FILES",
    "SAMPLES",
    "VERDICTS",
    "Claim",
    "Result",
    "bilinear_facts",
    "check",
    "check_claims",
    "judge_projections",
]
