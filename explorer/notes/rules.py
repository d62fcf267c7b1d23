"""How a claim is judged: printed digits against the true value, an identity to float64 rounding, a measured
value to its standard errors; and the true softmax weights the printed rows are judged against."""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_CEILING, Decimal

import torch

from attn_core.naive import masked_softmax

SIGMAS = 4  # a measured value passes within 4 standard errors (two-sided p ~ 6e-5)
ROUNDING = 1e-12  # what float64 may add to an identity that holds exactly


def vec(values, spec: str = ".4g") -> str:
    return "[" + ", ".join(f"{float(x):{spec}}" for x in values) + "]"


def upper(x: float, digits: int = 2) -> str:
    """x >= 0 rounded *up* to `digits` significant digits, as text: a bound a sentence may state ("within 2e-04").

    Rounding to nearest would print 1e-04 for 1.4e-04, a false bound.
    """
    if x <= 0:
        return "0"
    d = Decimal(x)  # the float's exact value: no rounding before the ceiling
    q = d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=ROUND_CEILING)
    return format(q, "f") if Decimal("0.001") <= q < 10_000 else format(q, f".{digits - 1}e")


def fits_digits(printed: float, true: float, decimals: int, below_one: float | None = None) -> bool:
    """True when `printed` is `true` rounded to `decimals`, or cut there (0.99999 printed as 0.9999...).

    below_one: 1 - true computed without cancellation (a softmax weight's complement is the sum of the
    others); a weight of 1 - 4e-18 is 1.0 in float64, but cut to 4 decimals it is 0.9999.
    """
    unit = 10.0**-decimals
    rounded = abs(printed - true) <= unit / 2 * (1 + 1e-9)
    cut_value = 1 - unit if below_one is not None and 0 < below_one < unit else math.trunc(true / unit) * unit
    return rounded or abs(printed - cut_value) <= unit * 1e-6


def printed_verdict(stated: Sequence[float], true: Sequence[float], decimals: int, tails=None) -> tuple[str, float]:
    """Verdict for numbers printed to `decimals`: right if every one fits, inexact within 2 units, else wrong."""
    error = max(abs(s - t) for s, t in zip(stated, true, strict=True))
    tails = tails or [None] * len(true)
    if all(fits_digits(s, t, decimals, b) for s, t, b in zip(stated, true, tails, strict=True)):
        return "right", error
    return ("inexact" if error <= 2 * 10.0**-decimals * (1 + 1e-9) else "wrong"), error


def max_error(error: float) -> dict:
    """The facts of a result said as "max error …" (its words in notes.computed.max_error)."""
    return {"error": error, "form": "max_error"}


def identity(error: float, scale: float = 1.0) -> str:
    return "right" if error <= ROUNDING * max(1.0, scale) else "wrong"


def measured(value: float, claimed: float, stderr: float, rounding: float = 0.0) -> str:
    return "right" if abs(value - claimed) <= rounding + SIGMAS * stderr else "wrong"


def softmax64(values) -> list[float]:
    return masked_softmax(torch.tensor(values, dtype=torch.float64)).tolist()
