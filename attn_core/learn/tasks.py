"""Toy sequence tasks whose right attention is known: the alignment a trained model should find.

Every task maps a source sequence (and, for recall, a query token) to a target sequence of fixed length.
The model reads the target through cross-attention: target position i sends a query, every source
position a key, and the task knows which source position holds the answer for i. That is its
alignment matrix A (target_len x source_len), with A[i, j] = 1 when target i should look at source j:

    reverse      y_i = x_{n-1-i}                  A is the anti-diagonal
    copy_offset  y_i = x_{(i + offset) mod n}     A is a diagonal shifted by `offset`, wrapping round
    reorder      an SVO sentence to SOV, each adjective after its noun: A is a fixed permutation matrix
                 (the words of its made-up language fit any slot: only their place gives their role)
    recall       k_1 v_1 ... k_m v_m, then a key q: y = the v_j with k_j = q; A marks v_j's position

Held-out sequences never appear in training: a hash of the tokens splits the space of sequences 4:1.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import torch

from attn_core._checks import check_int

TASK_NAMES = ("reverse", "copy_offset", "reorder", "recall")
SPLITS = ("train", "heldout")
BLANK = "_"  # the query token of target positions that only know where they are
HELDOUT_EVERY = 5  # one sequence in five (by hash) is held out
MAX_ROUNDS = 50  # draws before a split is declared (nearly) empty: only in tasks of a handful of sequences
MAX_TEXT = 400  # characters of typed input

# reorder: a 7-word sentence of a made-up language, in subject-verb-object order with adjectives before nouns,
# to a target language with the verb last and adjectives after nouns. Any word may fill any slot (the words
# carry no class), so only its place says which role a word plays, and only its position can align it.
SYLLABLES = ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze", "bo", "da", "fi", "gu", "he", "jo")
SOURCE_ROLES = ("S-det", "S-adj", "S-noun", "verb", "O-det", "O-adj", "O-noun")
REORDER = (0, 2, 1, 4, 6, 5, 3)  # target slot i takes source word REORDER[i]: det noun adj | det noun adj | verb
TARGET_ROLES = tuple(SOURCE_ROLES[j] for j in REORDER)


@dataclass(frozen=True)
class Batch:
    """source (B, n_s), query (B, n_t) and target (B, n_t) token ids; alignment (B, n_t, n_s) of 0/1."""

    source: torch.Tensor
    query: torch.Tensor
    target: torch.Tensor
    alignment: torch.Tensor


class Task:
    """A task: its vocabulary, its lengths, a sampler and its right alignment."""

    name = ""
    summary = ""

    def __init__(self, vocab: tuple[str, ...], source_len: int, target_len: int):
        self.vocab, self.source_len, self.target_len = vocab, source_len, target_len
        self.index = {token: i for i, token in enumerate(vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def input_len(self) -> int:
        """Tokens a user types: the source, plus the query key for recall."""
        return self.source_len

    def _draw(self, n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """n random (source (n, n_s), query (n, n_t)) pairs."""
        raise NotImplementedError

    def target_positions(self, source: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """(B, n_t) index of the source position each target position copies."""
        raise NotImplementedError

    def blank_query(self, n: int) -> torch.Tensor:
        return torch.full((n, self.target_len), self.index[BLANK], dtype=torch.long)

    def label(self, source: torch.Tensor, query: torch.Tensor) -> Batch:
        """The batch with its targets and alignment, from source and query alone."""
        pos = self.target_positions(source, query)  # (B, n_t)
        target = source.gather(1, pos)
        alignment = torch.nn.functional.one_hot(pos, self.source_len).float()  # (B, n_t, n_s)
        return Batch(source, query, target, alignment)

    def sample(self, batch_size: int, gen: torch.Generator, split: str = "train") -> Batch:
        """batch_size sequences of one split, drawn from `gen` (held-out ones never occur in "train")."""
        check_int("batch_size", batch_size, minimum=1)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        sources, queries, have = [], [], 0
        for _ in range(MAX_ROUNDS):  # 2x oversampling: about one pass for "train", three for "heldout"
            if have >= batch_size:
                break
            source, query = self._draw(2 * batch_size, gen)
            keep = is_heldout(source, query) == (split == "heldout")
            sources.append(source[keep])
            queries.append(query[keep])
            have += int(keep.sum())
        else:
            raise ValueError(
                f"task {self.name!r} has too few distinct sequences to hold some out ({split} found {have} of "
                f"{batch_size}): use a longer sequence (length) or more symbols (vocab_size)"
            )
        return self.label(torch.cat(sources)[:batch_size], torch.cat(queries)[:batch_size])

    def encode(self, tokens) -> tuple[torch.Tensor, torch.Tensor]:
        """One typed input (token names or ids, input_len of them) -> source (1, n_s), query (1, n_t)."""
        ids = self._ids(tokens)
        source = torch.tensor([ids[: self.source_len]], dtype=torch.long)
        return source, self.blank_query(1)

    def _ids(self, tokens) -> list[int]:
        if isinstance(tokens, str):
            tokens = parse_tokens(tokens)
        if not isinstance(tokens, (list, tuple)):
            raise ValueError(f"tokens must be a list of token ids or names, got {type(tokens).__name__}")
        if len(tokens) != self.input_len:
            raise ValueError(
                f"tokens must hold exactly {self.input_len} tokens for task {self.name!r}, got {len(tokens)}"
            )
        ids = []
        for t in tokens:
            if isinstance(t, str):
                if t not in self.index or t == BLANK:
                    raise ValueError(f"tokens: unknown token {t[:20]!r}; task {self.name!r} knows {self.words()}")
                ids.append(self.index[t])
            elif isinstance(t, int) and not isinstance(t, bool) and 0 <= t < self.vocab_size:
                ids.append(t)
            else:
                raise ValueError(f"tokens: each id must be an integer in [0, {self.vocab_size - 1}], got {t!r}")
        self._check_input(ids)
        return ids

    def _check_input(self, ids: list[int]) -> None:
        if self.index.get(BLANK) in ids:
            raise ValueError(f"tokens must not contain the blank token {BLANK!r}")

    def words(self) -> str:
        return " ".join(t for t in self.vocab if t != BLANK)

    def decode(self, ids) -> list[str]:
        return [self.vocab[int(i)] for i in ids]


def parse_tokens(text: str) -> list[str]:
    """Split typed text strictly: words of letters and digits, separated by spaces or commas."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ValueError(f"tokens text must be a string of at most {MAX_TEXT} characters")
    if not re.fullmatch(r"[\s,]*[A-Za-z0-9]+([\s,]+[A-Za-z0-9]+)*[\s,]*", text):
        raise ValueError(f"tokens text must be words of letters or digits separated by spaces, got {text[:40]!r}")
    return re.split(r"[\s,]+", text.strip(" \t\n,"))


def is_heldout(source: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """(B,) bool: a fixed hash of each sequence puts one in HELDOUT_EVERY into the held-out split."""
    tokens = torch.cat([source, query], dim=1).long()  # (B, n)
    h = torch.zeros(tokens.shape[0], dtype=torch.long)
    for column in tokens.T:  # polynomial rolling hash mod a prime, then a multiplicative mix
        h = (h * 131 + column + 7) % 1_000_003
    return (h * 2_654_435_761 % 1_000_003) % HELDOUT_EVERY == 0


def _letters(n: int) -> tuple[str, ...]:
    return tuple(string.ascii_lowercase[:n])


class FixedPermutation(Task):
    """Random symbols in; the same symbols out, target i taking source perm[i]: A is a permutation matrix."""

    def __init__(self, symbols: tuple[str, ...], perm: list[int]):
        super().__init__((*symbols, BLANK), len(perm), len(perm))
        self.n_symbols, self.perm = len(symbols), torch.tensor(perm)

    def _draw(self, n, gen):
        return torch.randint(self.n_symbols, (n, self.source_len), generator=gen), self.blank_query(n)

    def target_positions(self, source, query):
        return self.perm.expand(source.shape[0], -1)


class Reverse(FixedPermutation):
    name, summary = "reverse", "write the sequence backwards: target i looks at source n-1-i"

    def __init__(self, length: int, vocab_size: int):
        super().__init__(_letters(vocab_size), list(range(length - 1, -1, -1)))


class CopyOffset(FixedPermutation):
    name, summary = "copy_offset", "copy the sequence rotated by an offset: target i looks at source i+offset"

    def __init__(self, length: int, vocab_size: int, offset: int):
        super().__init__(_letters(vocab_size), [(i + offset) % length for i in range(length)])
        self.offset = offset


class Reorder(FixedPermutation):
    name, summary = "reorder", "subject-verb-object to subject-object-verb, adjective after noun: a fixed permutation"

    def __init__(self, vocab_size: int):
        super().__init__(SYLLABLES[:vocab_size], list(REORDER))


class Recall(Task):
    name, summary = "recall", "key-value pairs, then a key: answer its value, attending to the value's position"

    def __init__(self, pairs: int, n_keys: int, n_values: int = 10):
        keys, values = tuple(string.ascii_uppercase[:n_keys]), tuple(string.digits[:n_values])
        super().__init__((*keys, *values), 2 * pairs, 1)
        self.pairs, self.n_keys, self.n_values = pairs, n_keys, n_values

    @property
    def input_len(self) -> int:
        return self.source_len + 1

    def _draw(self, n, gen):
        # distinct keys per sequence (argsort of noise = a random permutation per row), random values
        keys = torch.rand(n, self.n_keys, generator=gen).argsort(dim=1)[:, : self.pairs]
        values = self.n_keys + torch.randint(self.n_values, (n, self.pairs), generator=gen)
        source = torch.stack([keys, values], dim=2).reshape(n, self.source_len)
        pick = torch.randint(self.pairs, (n, 1), generator=gen)
        return source, keys.gather(1, pick)

    def target_positions(self, source, query):
        keys = source[:, 0::2]  # (B, m)
        return 2 * (keys == query).long().argmax(dim=1, keepdim=True) + 1

    def encode(self, tokens):
        ids = self._ids(tokens)
        return torch.tensor([ids[:-1]], dtype=torch.long), torch.tensor([ids[-1:]], dtype=torch.long)

    def _check_input(self, ids):
        keys, values, query = ids[:-1:2], ids[1:-1:2], ids[-1]
        if any(k >= self.n_keys for k in keys) or query >= self.n_keys:
            raise ValueError(f"tokens: keys (odd places and the last token) must be letters {self.vocab[0]}..")
        if any(v < self.n_keys for v in values):
            raise ValueError("tokens: values (even places) must be digits")
        if len(set(keys)) != len(keys):
            raise ValueError("tokens: the keys of the pairs must be distinct")
        if query not in keys:
            raise ValueError("tokens: the last token (the query) must be one of the keys")


# per task: (default length, length range, default vocabulary, vocabulary range); reorder's length is fixed
TASK_SIZES = {
    "reverse": (8, (2, 16), 10, (2, 26)),
    "copy_offset": (8, (2, 16), 10, (2, 26)),
    "reorder": (7, None, 16, (2, 16)),
    "recall": (4, (1, 8), 8, (2, 26)),
}


def make_task(
    name: str, *, length: int | None = None, vocab_size: int | None = None, offset: int | None = None
) -> Task:
    """Build a task; length is the sequence length (recall: the number of pairs), vocab_size its symbols
    (recall: its keys), offset copy_offset's shift (default min(3, length - 1)). None takes the task's
    default; reorder's sentence length is fixed."""
    if name not in TASK_NAMES:
        raise ValueError(f"task must be one of {TASK_NAMES}, got {name!r}")
    if offset is not None:
        check_int("offset", offset, minimum=0, maximum=TASK_SIZES["copy_offset"][1][1] - 1)
    default_len, len_range, default_vocab, vocab_range = TASK_SIZES[name]
    vocab_size = default_vocab if vocab_size is None else vocab_size
    check_int("vocab_size", vocab_size, minimum=vocab_range[0], maximum=vocab_range[1])
    if name == "reorder":
        if length not in (None, default_len):
            raise ValueError(f"length is fixed at {default_len} for task 'reorder' (its sentence), got {length!r}")
        return Reorder(vocab_size)
    length = default_len if length is None else check_int("length", length, minimum=len_range[0], maximum=len_range[1])
    if name == "recall":
        if length > vocab_size:
            raise ValueError(f"length (pairs) must be <= vocab_size (distinct keys) = {vocab_size}, got {length}")
        return Recall(length, vocab_size)
    if name == "copy_offset":
        offset = min(3, length - 1) if offset is None else check_int("offset", offset, minimum=0, maximum=length - 1)
        return CopyOffset(length, vocab_size, offset)
    return Reverse(length, vocab_size)
