"""The claims' registry: what a claim is, what its check returns, and the one list every page reads.

A topic module registers each claim where its check is written (@claim above a check, register() for a check a
factory makes); the package then puts them in the order of its topics (in_order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

FILES = ("000", "001", "002", "003", "004")  # seeds/000_... to 004_...: their titles are in notes.files
VERDICTS = ("right", "inexact", "wrong")


@dataclass(frozen=True)
class Result:
    notes: str  # what the notes print: numbers or a formula, language-neutral
    computed: str  # the true value, computed now
    verdict: str  # one of VERDICTS
    facts: dict  # the numbers the one-line explanation quotes (notes.why.<key>)


@dataclass(frozen=True)
class Claim:
    key: str
    files: tuple[str, ...]  # the notes that state it (the first is where the locator points)
    check: Callable[[int], Result]  # seed -> Result


_BY_KEY: dict[str, Claim] = {}  # in registration order: the claims table's order


def register(key: str, *files: str, check: Callable[[int], Result]) -> Claim:
    """Add a claim of the notes `files` (at least one, the first where the locator points) judged by `check`."""
    if key in _BY_KEY:
        raise ValueError(f"claim {key!r} is registered twice")
    if not files or not set(files) <= set(FILES):
        raise ValueError(f"files of claim {key!r} must be some of {FILES}, got {files}")
    _BY_KEY[key] = Claim(key, files, check)
    return _BY_KEY[key]


def claim(key: str, *files: str):
    """@claim(key, *files) above a check registers it as that claim and leaves the function as it is."""

    def registered(check: Callable[[int], Result]) -> Callable[[int], Result]:
        register(key, *files, check=check)
        return check

    return registered


def in_order(topics: Sequence[str]) -> tuple[Claim, ...]:
    """Every claim, by topic in the order of `topics` (module names), each topic's in the order it registers them:
    the claims table's order, whatever order the topic modules were imported in."""
    rank = {topic: i for i, topic in enumerate(topics)}
    unlisted = {c.check.__module__ for c in _BY_KEY.values()} - set(rank)
    if unlisted:
        raise ValueError(f"topics must list every module that registers a claim, missing {sorted(unlisted)}")
    ordered = sorted(_BY_KEY.values(), key=lambda c: rank[c.check.__module__])  # stable: within a topic as registered
    _BY_KEY.clear()
    _BY_KEY.update((c.key, c) for c in ordered)
    return tuple(ordered)


def check(key: str, seed: int = 0) -> Result:
    """One claim, recomputed: for a page that judges only that claim (and must agree with the table)."""
    if key not in _BY_KEY:
        raise ValueError(f"key must name a claim of the notes, got {key!r}")
    result = _BY_KEY[key].check(seed)
    if result.verdict not in VERDICTS:
        raise AssertionError(f"claim {key} returned the verdict {result.verdict!r}")
    return result


def check_claims(seed: int, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per claim: key, file, notes (as printed), computed (live), verdict, facts (for the why line)."""
    rows = []
    for c in _BY_KEY.values() if keys is None else [_BY_KEY[k] for k in keys]:
        r = check(c.key, seed)
        rows.append(
            {
                "key": c.key,
                "file": c.files[0],
                "files": ", ".join(c.files),
                "notes": r.notes,
                "computed": r.computed,
                "verdict": r.verdict,
                "facts": r.facts,
            }
        )
    return pd.DataFrame(rows)
