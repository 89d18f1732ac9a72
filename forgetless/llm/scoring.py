"""Log-likelihoods of scored tokens from a causal LM, with bounded memory: the engine of forgetless's
lm-eval requests (``llm/lm.py``) and of the papers' WikiText-2 windows (``metrics/perplexity.py``).

A **row** is one model input and the tokens it scores. lm-eval's causal request (context,
continuation) is the row ``full = (context + continuation)[-(L+1):]``: input ``full[:-1]``, targets
``full[1:]``, the last ``len(continuation)`` of them scored (``_select_cont_toks``), so

    log p(continuation | context) = Σ_{j scored} log softmax(logits_j)[full_{j+1}]

and the row is greedy when every scored target is its position's argmax.

**Shared-context scoring** (prefix caching, as LLMBox does; lm-eval 0.4 shares a context only when
every choice is one token): the rows of one item (its choices) share a token prefix. It runs once per
item (``logits_to_keep=1``: its logits are not wanted), its KV cache is repeated per choice
(``Cache.batch_select_indices``) and each choice's remaining tokens run from it, at their own positions.
Causal attention sees the same tokens at the same positions as in the full forward, so every scored
log-probability is the full forward's up to float rounding (checked against lm-eval in
``tests/test_llm_scoring.py``; ``benchmarks/llm_vs_lm_eval.py`` on SmolLM2). The prefix stops one token
short of the first scored position, so no logit of the prefix is needed. Items are batched: prefixes
right-padded (their pads come after every real token, so no real token attends to one, and the
choices' attention mask hides them), choices right-padded.

**Bounded memory**: no batch of full-vocabulary logits with a log-softmax copy is held. One forward
feeds at most ``LOGITS_BUDGET`` bytes of fp32 logits (longer inputs go in segments through the KV
cache), and of each position only ``logit[target] − logsumexp(logits)`` and the greedy flag are kept
(a 2,048-token window over SmolLM2's 49,152-token vocabulary is 400 MB of logits; Gemma 3's 262,144
make it 2 GB).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..models.transformers_compat import CACHE_ARG, output_cache

SHARED, EXACT = "shared-context", "lm-eval"  # who computes the log-likelihoods (llm/lm.py)
TOLERANCE = 2e-4  # nats: a choice's log-likelihood here is within this of lm-eval's own (tests, benchmark)
LOGITS_BUDGET = 256 * 2 ** 20  # bytes of fp32 logits one forward may produce
ROW_TOKENS = 128  # a batch holds at most batch_size × ROW_TOKENS input tokens


@dataclass(frozen=True)
class Row:
    """``full[:-1]`` is the input, ``full[1:]`` the targets, the last ``scored`` of them scored."""

    full: tuple[int, ...]
    scored: int

    @property
    def length(self) -> int:
        return len(self.full) - 1


def request_row(context: list[int], continuation: list[int], max_length: int) -> Row:
    """lm-eval's causal request as a row: cut from the left to ``max_length`` input tokens."""
    return Row(tuple((list(context) + list(continuation))[-(max_length + 1):]), len(continuation))


def shared_prefix(rows: list[Row]) -> int:
    """The input tokens the rows of one item share and run once: their common prefix, short of every
    row's first scored position (0 for a lone row: nothing to share)."""
    if len(rows) < 2:
        return 0
    first, limit = rows[0].full, min(r.length - r.scored for r in rows)
    n = 0
    while n < limit and all(r.full[n] == first[n] for r in rows[1:]):
        n += 1
    return n


def vocabulary(model) -> int:
    """Rows of the output layer (the logits' width)."""
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.get_text_config().vocab_size)


@torch.no_grad()
def score_groups(model, groups: list[list[Row]], batch_size: int, on_rows=None) -> list[list[tuple[float, bool]]]:
    """``(log-likelihood, greedy)`` of every row of every group (an item's choices), in order; groups
    that share a prefix are scored from its cache (module docstring), the others as plain rows.
    ``on_rows(n)`` is called as rows are scored."""
    prefixes = [shared_prefix(g) for g in groups]
    results: list[list] = [[None] * len(g) for g in groups]
    window = _sliding_window(model)
    for batch in _plan(groups, prefixes, batch_size, vocabulary(model), window):
        shared = [(i, prefixes[i]) for i in batch if prefixes[i] > 0]
        plain = [(i, j) for i in batch if prefixes[i] == 0 for j in range(len(groups[i]))]
        if shared:
            scored = _shared_batch(model, [groups[i] for i, _ in shared], [q for _, q in shared])
            for (i, _), values in zip(shared, scored):
                results[i] = values
        if plain:
            for (i, j), value in zip(plain, _plain_batch(model, [groups[i][j] for i, j in plain])):
                results[i][j] = value
        if on_rows is not None:
            on_rows(sum(len(groups[i]) for i in batch))
    return results


def score_rows(model, rows: list[Row], batch_size: int, on_rows=None) -> list[tuple[float, bool]]:
    """``(log-likelihood, greedy)`` of independent rows (windows of a text), in order."""
    return [r[0] for r in score_groups(model, [[row] for row in rows], batch_size, on_rows)]


def _plan(groups, prefixes, batch_size: int, vocab: int, window: int | None) -> list[list[int]]:
    """Batches of group indices, longest first: a batch is all shared-prefix groups or all plain ones,
    of at most ``batch_size`` rows, ``batch_size × ROW_TOKENS`` input tokens and ``LOGITS_BUDGET`` of
    its suffixes' logits (one group always fits: its logits then go in segments). With a sliding-window
    model, a shared group longer than the window is a batch of its own (prefix pads would shift it)."""
    def suffix(i: int) -> int:
        return max(r.length for r in groups[i]) - prefixes[i]

    def fits(batch: list[int]) -> bool:
        rows = sum(len(groups[i]) for i in batch)
        longest = max(suffix(i) for i in batch)
        return (rows <= batch_size and rows * (max(prefixes[i] for i in batch) + longest) <= batch_size * ROW_TOKENS
                and rows * longest * vocab * 4 <= LOGITS_BUDGET)

    def alone(i: int) -> bool:
        return window is not None and prefixes[i] > 0 and prefixes[i] + suffix(i) > window

    batches: list[list[int]] = []
    for i in sorted(range(len(groups)), key=lambda i: (prefixes[i] > 0, prefixes[i] + suffix(i)), reverse=True):
        last = batches[-1] if batches else None
        if last and (prefixes[last[0]] > 0) == (prefixes[i] > 0) and not alone(i) and not alone(last[0]) \
                and fits(last + [i]):
            last.append(i)
        else:
            batches.append([i])
    return batches


def _shared_batch(model, groups: list[list[Row]], prefixes: list[int]) -> list[list[tuple[float, bool]]]:
    """One forward of the groups' prefixes (right-padded), its cache repeated per row, then every
    row's suffix (right-padded, at its own positions, the prefix pads masked)."""
    device = next(model.parameters()).device
    width = max(prefixes)
    ids = torch.zeros(len(groups), width, dtype=torch.long)
    valid = torch.zeros(len(groups), width, dtype=torch.long)
    for g, (rows, q) in enumerate(zip(groups, prefixes)):
        ids[g, :q] = torch.tensor(rows[0].full[:q])
        valid[g, :q] = 1
    cache = output_cache(model(input_ids=ids.to(device), use_cache=True, logits_to_keep=1))
    owner = torch.tensor([g for g, rows in enumerate(groups) for _ in rows])
    cache.batch_select_indices(owner.to(device))
    flat = [(row, prefixes[g]) for g, rows in enumerate(groups) for row in rows]
    values = _suffix_forward(model, flat, cache, valid[owner])
    out, start = [], 0
    for rows in groups:
        out.append(values[start:start + len(rows)])
        start += len(rows)
    return out


def _plain_batch(model, rows: list[Row]) -> list[tuple[float, bool]]:
    return _suffix_forward(model, [(row, 0) for row in rows], None, None)


def _suffix_forward(model, rows: list[tuple[Row, int]], cache, prefix_valid) -> list[tuple[float, bool]]:
    """Run each row's input from its prefix length ``q`` on (after ``cache``), in segments of at most
    ``LOGITS_BUDGET`` of logits, keeping each position's target log-probability and greedy flag."""
    device = next(model.parameters()).device
    width = max(row.length - q for row, q in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    targets = torch.zeros(len(rows), width, dtype=torch.long)
    scored = torch.zeros(len(rows), width, dtype=torch.bool)
    for r, (row, q) in enumerate(rows):
        n = row.length - q
        ids[r, :n] = torch.tensor(row.full[q:-1])
        targets[r, :n] = torch.tensor(row.full[q + 1:])
        scored[r, n - row.scored:n] = True
    positions = torch.tensor([q for _, q in rows])[:, None] + torch.arange(width)[None, :]
    step = max(1, LOGITS_BUDGET // (len(rows) * vocabulary(model) * 4))
    logprob = torch.zeros(len(rows), width, dtype=torch.float64)
    greedy = torch.ones(len(rows), width, dtype=torch.bool)
    for start in range(0, width, step):
        end = min(width, start + step)
        kwargs = {CACHE_ARG: cache, "position_ids": positions[:, start:end].to(device)} if cache is not None \
            else {}
        if prefix_valid is not None:
            kwargs["attention_mask"] = torch.cat([prefix_valid, torch.ones(len(rows), end, dtype=torch.long)],
                                                 dim=1).to(device)
        out = model(input_ids=ids[:, start:end].to(device), use_cache=end < width, **kwargs)
        cache = output_cache(out) if end < width else None
        logits = out.logits.float()
        del out
        chunk = targets[:, start:end].to(device)
        picked = logits.gather(-1, chunk[..., None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        logprob[:, start:end] = picked.double().cpu()
        greedy[:, start:end] = (logits.argmax(dim=-1) == chunk).cpu()
        del logits, picked
    totals = (logprob * scored).sum(dim=1)
    exact = (greedy | ~scored).all(dim=1)
    return [(float(t), bool(g)) for t, g in zip(totals, exact)]


def _sliding_window(model) -> int | None:
    """The model's attention window when some of its layers attend to a sliding window (None: all full)."""
    config = model.config.get_text_config()
    window = getattr(config, "sliding_window", None)
    return int(window) if window and getattr(config, "use_sliding_window", True) is not False else None
