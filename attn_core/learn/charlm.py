"""A character-level language model trained on Python's own help text, small enough to ship (fp16, < 1 MB).

Corpus: `pydoc_data.topics`, the help topics that ship inside CPython (`help("assert")` prints one), English prose
with code examples, under the Python Software Foundation License (CPython's LICENSE). Nothing is downloaded. The
topics are joined in sorted order; typographic quotes and dashes become ASCII, and the few other characters outside
ALPHABET (newline + printable ASCII) are dropped. The last HELD_OUT of the text is held out for evaluation. The text
differs between Python releases, so a checkpoint records the SHA-256 of the text it was trained on.

Training sequences: windows of the text, and a fraction (`repeat_fraction`) of "repeated" sequences, a chunk
written again and again to fill the window: a chunk of the text, or (the shipped recipe) of random characters,
which only copying from earlier in the window can predict. The first `copy_first` steps train on repeated chunks
only, then text joins. Plain text repeats too little for a model this small to learn copying within minutes of one
core: with text alone or a quarter of text chunks, no induction head formed in 600-800 steps (measured, see
benchmarks/char_lm.md).

Remake the shipped checkpoint (one thread): python -m tools.train_char_lm --out explorer/data/char_lm.pt
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace

import torch
import torch.nn.functional as F

from attn_core._checks import check_int, check_positive

ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))  # the model's 96 characters
_INDEX = {ch: i for i, ch in enumerate(ALPHABET)}
_ASCII = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": "-", "\u2013": "-"})
HELD_OUT = 0.1
REPEAT_SOURCES = ("text", "random")
MAX_TEXT = 256  # characters a page may ask the model to read: an (H, n, n) map per layer stays small


def corpus_text() -> str:
    """Python's help topics, joined in sorted order, in ALPHABET only."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[key].strip("\n") for key in sorted(topics)).translate(_ASCII)
    text = text.replace("\u2026", "...")
    return "".join(ch for ch in text if ch in _INDEX)


def corpus_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def unknown_characters(text: str) -> list[str]:
    """The distinct characters of `text` outside ALPHABET, in order of first appearance."""
    return list(dict.fromkeys(ch for ch in text if ch not in _INDEX))


def encode(text: str) -> torch.Tensor:
    """text -> (n,) long token ids; ValueError if it is not a str or holds a character outside ALPHABET."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    unknown = unknown_characters(text)
    if unknown:
        shown = ", ".join(repr(ch) for ch in unknown[:5])
        raise ValueError(f"text holds characters outside the model's alphabet (newline + printable ASCII): {shown}")
    return torch.tensor([_INDEX[ch] for ch in text], dtype=torch.long)


def decode(tokens) -> str:
    """token ids (a 1-D tensor or a sequence of ints) -> text; ValueError on an id outside ALPHABET."""
    ids = [int(t) for t in (tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens)]
    bad = [t for t in ids if not 0 <= t < len(ALPHABET)]
    if bad:
        raise ValueError(f"tokens must lie in 0..{len(ALPHABET) - 1}, got {bad[0]}")
    return "".join(ALPHABET[t] for t in ids)


def split_corpus(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, held_out): the held-out part is the text's last HELD_OUT, so no window straddles both."""
    cut = int(len(tokens) * (1 - HELD_OUT))
    return tokens[:cut], tokens[cut:]


@dataclass(frozen=True)
class CharLMConfig:
    """One training recipe. The defaults are the shipped checkpoint's (benchmarks/char_lm.md)."""

    d_model: int = 64
    num_heads: int = 4
    layers: int = 2
    mlp: bool = False
    positions: str = "learned"
    seq_len: int = 96
    batch: int = 32
    steps: int = 3000
    lr: float = 3e-3
    warmup: int = 100
    repeat_fraction: float = 0.5
    repeat_source: str = "random"  # the repeated chunks: "text" (a chunk of the corpus) or "random" characters
    copy_first: int = 800  # the first steps train on repeated chunks only (copying first, then text joins)
    min_chunk: int = 8
    max_chunk: int = 40
    eval_every: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("d_model", "num_heads", "layers", "seq_len", "batch", "steps", "eval_every"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        check_int("copy_first", self.copy_first, minimum=0)
        check_positive("lr", self.lr)
        if not 0.0 <= self.repeat_fraction <= 1.0:
            raise ValueError(f"repeat_fraction must lie in [0, 1], got {self.repeat_fraction!r}")
        if self.repeat_source not in REPEAT_SOURCES:
            raise ValueError(f"repeat_source must be one of {REPEAT_SOURCES}, got {self.repeat_source!r}")
        check_int("min_chunk", self.min_chunk, minimum=2)
        check_int("max_chunk", self.max_chunk, minimum=self.min_chunk)
        if 2 * self.max_chunk > self.seq_len:
            raise ValueError(f"max_chunk must be at most seq_len / 2 = {self.seq_len // 2}, got {self.max_chunk}")


def text_windows(tokens: torch.Tensor, count: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
    """(count, seq_len) windows of `tokens` at random starts."""
    starts = torch.randint(0, len(tokens) - seq_len, (count,), generator=generator)
    return torch.stack([tokens[s : s + seq_len] for s in starts.tolist()])


def repeated_windows(tokens: torch.Tensor, count: int, cfg: CharLMConfig, generator: torch.Generator) -> torch.Tensor:
    """(count, seq_len): a chunk of min_chunk..max_chunk characters repeated to fill the window: a chunk of the
    text, or (repeat_source "random") characters drawn uniformly, which only copying can predict."""
    lengths = torch.randint(cfg.min_chunk, cfg.max_chunk + 1, (count,), generator=generator).tolist()
    if cfg.repeat_source == "random":
        chunks = [torch.randint(0, len(ALPHABET), (n,), generator=generator) for n in lengths]
    else:
        starts = torch.randint(0, len(tokens) - cfg.max_chunk, (count,), generator=generator).tolist()
        chunks = [tokens[s : s + n] for s, n in zip(starts, lengths, strict=True)]
    return torch.stack([c.repeat(math.ceil(cfg.seq_len / len(c)))[: cfg.seq_len] for c in chunks])


def training_batch(
    tokens: torch.Tensor, cfg: CharLMConfig, generator: torch.Generator, step: int | None = None
) -> torch.Tensor:
    """(batch, seq_len): text windows, the first round(batch * repeat_fraction) of them replaced by repeated chunks
    (all of them while step <= copy_first)."""
    copying = step is not None and step <= cfg.copy_first
    repeated = cfg.batch if copying else round(cfg.batch * cfg.repeat_fraction)
    parts = [repeated_windows(tokens, repeated, cfg, generator)] if repeated else []
    if repeated < cfg.batch:
        parts.append(text_windows(tokens, cfg.batch - repeated, cfg.seq_len, generator))
    return torch.cat(parts)


def next_char_loss(model, batch: torch.Tensor) -> torch.Tensor:
    logits, _ = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


@dataclass(frozen=True)
class Evaluation:
    """Losses in nats per character on held-out text and on held-out repeated chunks (second copy onwards)."""

    step: int
    seconds: float
    train_loss: float
    text_loss: float
    repeat_loss: float


def _evaluate(model, held: torch.Tensor, cfg: CharLMConfig, step: int, seconds: float, train_loss: float):
    gen = torch.Generator().manual_seed(12345)
    text = text_windows(held, 64, cfg.seq_len, gen)
    repeated = repeated_windows(held, 64, replace(cfg, repeat_source="text"), gen)  # held-out text, repeated
    with torch.no_grad():
        text_loss = float(next_char_loss(model, text))
        logits, _ = model(repeated[:, :-1])
        losses = F.cross_entropy(logits.transpose(1, 2), repeated[:, 1:], reduction="none")  # (B, n - 1)
        repeat_loss = float(losses[:, cfg.max_chunk :].mean())  # every target there is a copy
    return Evaluation(step, seconds, train_loss, text_loss, repeat_loss)


def build_model(cfg: CharLMConfig, decoder=None):
    """A fresh CausalDecoder for `cfg`, seeded from cfg.seed."""
    if decoder is None:
        from attn_core.learn.decoder import CausalDecoder as decoder
    return decoder(
        len(ALPHABET),
        cfg.seq_len,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        layers=cfg.layers,
        mlp=cfg.mlp,
        positions=cfg.positions,
        generator=torch.Generator().manual_seed(cfg.seed),
    )


def train_iter(cfg: CharLMConfig, *, decoder=None, stop: Callable[[], bool] | None = None) -> Iterator:
    """Train on the corpus; yields an Evaluation every eval_every steps (and at the end), then the trained model."""
    tokens = encode(corpus_text())
    train_tokens, held = split_corpus(tokens)
    model = build_model(cfg, decoder)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, cfg))
    start = time.process_time()
    for step in range(1, cfg.steps + 1):
        loss = next_char_loss(model, training_batch(train_tokens, cfg, gen, step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        last = step == cfg.steps or (stop is not None and stop())
        if step % cfg.eval_every == 0 or last:
            model.eval()
            yield _evaluate(model, held, cfg, step, time.process_time() - start, loss.item())
            model.train()
        if last:
            break
    yield model.eval()


def _lr_factor(step: int, cfg: CharLMConfig) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    done = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, done)))


def config_from_dict(values: dict) -> CharLMConfig:
    names = {f.name for f in fields(CharLMConfig)}
    return CharLMConfig(**{k: v for k, v in values.items() if k in names})


def config_dict(cfg: CharLMConfig) -> dict:
    return asdict(cfg)


def save_checkpoint(model, cfg: CharLMConfig, path, *, corpus: str, measured: dict) -> int:
    """Write the model's weights in fp16 with what rebuilds it (decoder config, recipe, corpus hash, measured
    numbers); returns the file's size in bytes."""
    import pathlib

    state = {k: v.detach().to(torch.float16) for k, v in model.state_dict().items()}
    payload = {
        "format": 1,
        "alphabet": ALPHABET,
        "decoder": dict(model.config),
        "recipe": config_dict(cfg),
        "corpus_sha256": corpus_sha256(corpus),
        "measured": dict(measured),
        "state": state,
    }
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(payload, path)
    return path.stat().st_size


def load_checkpoint(path, *, decoder=None):
    """(model in fp32, eval mode; the checkpoint's other entries). Loads tensors and plain values only."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("format") != 1 or payload.get("alphabet") != ALPHABET:
        raise ValueError(f"{path} is not a character model checkpoint of this version")
    if decoder is None:
        from attn_core.learn.decoder import CausalDecoder as decoder
    model = decoder(**payload["decoder"], generator=torch.Generator().manual_seed(0))
    model.load_state_dict({k: v.float() for k, v in payload["state"].items()})
    return model.eval(), {k: v for k, v in payload.items() if k != "state"}


# Phrases the model never read (not in the corpus), each written twice or more to fill PROBE_LEN characters:
# the second copy is where copying from context can predict the next character.
PROBE_PHRASES = (
    "the quick brown fox jumps over the lazy dog. ",
    "def spam(eggs): return eggs * 2  # ham\n",
    "Attention weights sum to one in every row. ",
    "x = [i ** 2 for i in range(10) if i % 3]\n",
)
PROBE_LEN = 96
LOCAL_SPAN = 4  # keys i-3..i: a "local" head keeps most of its weight this close


def probe_tokens() -> torch.Tensor:
    """(len(PROBE_PHRASES), PROBE_LEN): each probe phrase repeated to PROBE_LEN characters."""
    rows = [(p * math.ceil(PROBE_LEN / len(p)))[:PROBE_LEN] for p in PROBE_PHRASES]
    return torch.stack([encode(r) for r in rows])


def local_score(weights, span: int = LOCAL_SPAN) -> torch.Tensor:
    """weights: one (B, H, n, n) map per layer -> (L, H): mean weight on keys i-span+1..i (queries i >= 1)."""
    n = weights[0].shape[-1]
    i = torch.arange(n)
    near = (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] < span)  # (n, n)
    return torch.stack([(w.detach().float() * near).sum(-1)[:, :, 1:].mean(dim=(0, 2)) for w in weights])


def scores_of(weights, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """heads.head_scores plus the local score: {score: (L, H)}."""
    from attn_core.learn.heads import head_scores

    return head_scores(weights, tokens) | {"local": local_score(weights)}


def probe_scores(model) -> dict[str, torch.Tensor]:
    """scores_of on the probe phrases (each repeated), the numbers the shipped checkpoint is tested on."""
    tokens = probe_tokens()
    with torch.no_grad():
        _, weights = model(tokens)
    return scores_of(weights, tokens)


# A head is named by the first of these scores that reaches its threshold (in this order); "mixed" if none does.
ROLE_ORDER = ("induction", "previous_token", "first_token", "duplicate_token", "local")
ROLES = (*ROLE_ORDER, "mixed")


def split_threshold(values) -> float | None:
    """Where a score's values split into a low and a high group that stand apart, else None.

    The split is Otsu's (the one that maximises the between-group variance); it counts only if the empty stretch
    between the groups is wider than every stretch inside either group, so a continuum is never cut in two. The
    threshold is halfway across that stretch. NaN values (a score undefined on a text) are left out.
    """
    v = torch.as_tensor(values, dtype=torch.float64).flatten()
    v = v[~v.isnan()].sort().values
    if len(v) < 3:
        return None
    k = torch.arange(1, len(v), dtype=torch.float64)
    low = v.cumsum(0)[:-1] / k
    high = (v.sum() - v.cumsum(0)[:-1]) / (len(v) - k)
    cut = int((k * (len(v) - k) * (low - high) ** 2).argmax()) + 1  # v[:cut] low, v[cut:] high
    steps = v.diff()
    inside = torch.cat([steps[: cut - 1], steps[cut:]])
    gap = float(steps[cut - 1])
    if gap <= 0 or (len(inside) and gap <= float(inside.max())):
        return None
    return float(v[cut - 1] + v[cut]) / 2


def calibration_scores(model, texts=()) -> dict[str, torch.Tensor]:
    """{score: every head's value on each probe phrase and each of `texts`}, flattened: what thresholds come from."""
    rows = [probe_tokens()[i : i + 1] for i in range(len(PROBE_PHRASES))] + [encode(t)[None] for t in texts]
    parts: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for tokens in rows:
            _, weights = model(tokens)
            for name, value in scores_of(weights, tokens).items():
                parts.setdefault(name, []).append(value.flatten())
    return {name: torch.cat(parts[name]) for name in ROLE_ORDER}


def derived_thresholds(model, texts=()) -> dict[str, float | None]:
    """{score: split_threshold of the model's calibration_scores}: None where no group of heads stands apart."""
    return {name: split_threshold(values) for name, values in calibration_scores(model, texts).items()}


def head_roles(scores: dict[str, torch.Tensor], thresholds: dict[str, float | None]) -> list[list[str]]:
    """[layer][head] -> the role its scores earn (a NaN score, undefined on the text, or a None threshold: none)."""
    layers, heads = scores["previous_token"].shape
    return [[_role(scores, thresholds, layer, head) for head in range(heads)] for layer in range(layers)]


def _role(scores, thresholds, layer: int, head: int) -> str:
    for name in ROLE_ORDER:
        threshold = thresholds.get(name)
        value = float(scores[name][layer, head])
        if threshold is not None and value == value and value >= threshold:  # NaN fails
            return name
    return "mixed"


@dataclass(frozen=True)
class Reading:
    """The model on one text: per-layer maps (L, H, n, n), scores {name: (L, H)}, next-character probabilities
    (n, vocab) at every position, and the loss (n - 1) of each actual next character with whether its pair
    (x_i, x_{i+1}) occurred earlier in the text (heads.repeated_pairs)."""

    tokens: torch.Tensor
    weights: torch.Tensor
    scores: dict
    probs: torch.Tensor
    losses: torch.Tensor
    repeated: torch.Tensor


def read(model, text: str) -> Reading:
    """Run the model on `text` (2..max_len characters of ALPHABET); ValueError otherwise."""
    from attn_core.learn.heads import repeated_pairs

    tokens = encode(text)
    if not 2 <= len(tokens) <= model.max_len:
        raise ValueError(f"text must hold 2 to {model.max_len} characters, got {len(tokens)}")
    tokens = tokens[None]  # (1, n)
    with torch.no_grad():
        logits, weights = model(tokens)
    losses = F.cross_entropy(logits[0, :-1], tokens[0, 1:], reduction="none")  # (n - 1,)
    return Reading(
        tokens=tokens[0],
        weights=torch.stack([w[0] for w in weights]),
        scores=scores_of(weights, tokens),
        probs=logits[0].softmax(dim=-1),
        losses=losses,
        repeated=repeated_pairs(tokens)[0],
    )
