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
``tests/llm/test_llm_scoring.py``; ``benchmarks/llm_vs_lm_eval.py`` on SmolLM2). The prefix stops one token
short of the first scored position, so no logit of the prefix is needed. Items are batched: prefixes
right-padded (their pads come after every real token, so no real token attends to one, and the
choices' attention mask hides them), choices right-padded. ``batch_size`` bounds a forward's tokens
(``batch_size × ROW_TOKENS``, a cached prefix counted once per row: what memory holds), not its rows: short
rows (ARC's answers of a few tokens) go up to ``SHORT_ROWS × batch_size`` a forward, since many small
forwards waste the CPU (SmolLM2, six tasks × 100 items, batch size 32, alternating runs: 56.9-64.7 s of
scoring at ``batch_size`` rows a forward, 51.7-53.0 s at four times that, 51.0 s at eight times with 250 MiB more;
at 500 items 317.8 → 312.9 s, ``benchmarks/llm_vs_lm_eval_results.md``).

Only the scored positions' logits are computed (``logits_to_keep`` as a mask: no pad's, no context
token's) where the model slices its hidden states through transformers' helper.

**Bounded memory**: no batch of full-vocabulary logits with a log-softmax copy is held. One forward
feeds at most ``LOGITS_BUDGET`` bytes of fp32 logits (longer inputs go in segments through the KV
cache), and of each position only ``logit[target] − logsumexp(logits)`` and the greedy flag are kept
(a 2,048-token window over SmolLM2's 49,152-token vocabulary is 400 MB of logits; Gemma 3's 262,144
make it 2 GB).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from ..models.transformers_compat import CACHE_ARG, keeps_logits_by_mask, output_cache

LOGITS_BUDGET = 256 * 2 ** 20  # bytes of fp32 logits one forward may produce
ROW_TOKENS = 128  # a batch holds at most batch_size × ROW_TOKENS input tokens (a cached prefix counted per row)
SHORT_ROWS = 4  # a chunk of short rows holds up to SHORT_ROWS × batch_size of them, within those tokens
PAYS = 0.5  # share an item's prefix when it saves at least this share of its rows' own tokens
SIMILAR = 0.8  # a prefix batch holds prefixes of at least this share of its longest (little padding)
# one forward's fixed cost in tokens, chosen on SmolLM2 (2 threads, 100 items a task; ±4 s noise):
# 8 → 80.7 s, 24 → 73.8 s, 48 → 79.2 s of scoring
FORWARD_COST = 24


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


def shared(rows: list[Row]) -> int:
    """The shared prefix when sharing it pays: the tokens it saves (run once instead of once per row)
    are at least ``PAYS`` of what the rows still run on their own; else 0 (the rows run alone, sorted
    by length with every other such row: less padding, e.g. PIQA's short goals and long solutions)."""
    q = shared_prefix(rows)
    return q if (len(rows) - 1) * q >= PAYS * sum(r.length - q for r in rows) else 0


def vocabulary(model) -> int:
    """Rows of the output layer (the logits' width)."""
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.get_text_config().vocab_size)


@torch.inference_mode()  # no autograd bookkeeping: the small suffix forwards feel it
def score_groups(model, groups: list[list[Row]], batch_size: int, on_rows=None) -> list[list[tuple[float, bool]]]:
    """``(log-likelihood, greedy)`` of every row of every group (an item's choices), in order. Groups
    that share a prefix run it in batches of similar prefix lengths (``_prefix_batches``); then their
    rows, and the rows of the other groups, run in chunks of similar lengths (``_chunks``), so little
    is spent on padding. ``on_rows(n)`` is called as rows are scored."""
    prefixes = [shared(g) for g in groups]
    results: list[list] = [[None] * len(g) for g in groups]
    vocab = vocabulary(model)

    def run(chunk, cache, valid):
        values = _suffix_forward(model, [(groups[i][j], prefixes[i]) for i, j in chunk], cache, valid)
        for (i, j), value in zip(chunk, values):
            results[i][j] = value
        if on_rows is not None:
            on_rows(len(chunk))

    for batch in _prefix_batches(groups, prefixes, batch_size, _sliding_window(model)):
        cache, valid = _prefix_forward(model, [groups[i][0] for i in batch], [prefixes[i] for i in batch])
        owner = {i: g for g, i in enumerate(batch)}
        rows = [(i, j) for i in batch for j in range(len(groups[i]))]
        for chunk in _chunks(rows, groups, prefixes, batch_size, vocab, valid.shape[1]):
            index = torch.tensor([owner[i] for i, _ in chunk])
            run(chunk, _selected(cache, index.to(next(model.parameters()).device)), valid[index])
    plain = [(i, j) for i in range(len(groups)) if prefixes[i] == 0 for j in range(len(groups[i]))]
    for chunk in _chunks(plain, groups, prefixes, batch_size, vocab, 0):
        run(chunk, None, None)
    return results


def score_rows(model, rows: list[Row], batch_size: int, on_rows=None) -> list[tuple[float, bool]]:
    """``(log-likelihood, greedy)`` of independent rows (windows of a text), in order."""
    return [r[0] for r in score_groups(model, [[row] for row in rows], batch_size, on_rows)]


def _prefix_batches(groups, prefixes, batch_size: int, window: int | None) -> list[list[int]]:
    """The groups with a shared prefix in batches of similar prefix lengths (longest first; each at
    least ``SIMILAR`` of the batch's longest): at most ``batch_size × ROW_TOKENS`` prefix tokens
    (padded) and ``SHORT_ROWS × batch_size`` rows to chunk. With a
    sliding-window model, a group longer than the window is a batch of its own (prefix pads would
    shift its window)."""
    def alone(i: int) -> bool:
        return window is not None and max(r.length for r in groups[i]) > window

    batches: list[list[int]] = []
    for i in sorted((i for i in range(len(groups)) if prefixes[i] > 0), key=lambda i: prefixes[i], reverse=True):
        last = batches[-1] if batches else None
        if last and not alone(i) and not alone(last[0]) and prefixes[i] >= SIMILAR * prefixes[last[0]] \
                and (len(last) + 1) * prefixes[last[0]] <= batch_size * ROW_TOKENS \
                and sum(len(groups[k]) for k in last) + len(groups[i]) <= SHORT_ROWS * batch_size:
            last.append(i)
        else:
            batches.append([i])
    return batches


def _chunks(rows: list[tuple[int, int]], groups, prefixes, batch_size: int, vocab: int,
            cached: int) -> list[list[tuple[int, int]]]:
    """``(group, row)`` pairs in chunks of similar suffix lengths (longest first), each of at most
    ``SHORT_ROWS × batch_size`` rows, ``batch_size × ROW_TOKENS`` tokens with the ``cached`` prefix and
    ``LOGITS_BUDGET`` of logits (one row always fits: its logits then go in segments). Where the
    chunks end is chosen to run the fewest tokens, pads included, counting each forward as
    ``FORWARD_COST`` tokens more (a dynamic programme over the sorted lengths): a pad costs what a
    real token does, so a chunk ends where the lengths drop."""
    def length(pair):
        return groups[pair[0]][pair[1]].length - prefixes[pair[0]]

    order = sorted(rows, key=length, reverse=True)
    n = len(order)
    best, cut = [0.0] + [float("inf")] * n, [0] * (n + 1)  # best[j]: the cost of the first j rows
    for i in range(n):
        longest = length(order[i])
        for count in range(1, min(SHORT_ROWS * batch_size, n - i) + 1):
            if count > 1 and (count * (cached + longest) > batch_size * ROW_TOKENS
                              or count * longest * vocab * 4 > LOGITS_BUDGET):
                break
            cost = best[i] + FORWARD_COST + count * longest
            if cost < best[i + count]:
                best[i + count], cut[i + count] = cost, i
    chunks, j = [], n
    while j > 0:
        chunks.append(order[cut[j]:j])
        j = cut[j]
    return chunks[::-1]


def _selected(cache, index: torch.Tensor):
    """The rows ``index`` of a prefix cache (each choice's copy of its item's prefix), ``cache`` left as
    it is for the next chunk. Dynamic layers rebind their tensors when they select and when they grow
    (``torch.cat``), so copying the layers, not their tensors, is enough; any other cache is copied whole."""
    if all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in getattr(cache, "layers", [None])):
        selected = copy.copy(cache)
        selected.layers = [copy.copy(layer) for layer in cache.layers]
    else:
        selected = copy.deepcopy(cache)
    selected.batch_select_indices(index)
    return selected


def _prefix_forward(model, rows: list[Row], prefixes: list[int]):
    """One forward of each group's prefix (right-padded: the pads come after every real token, so no
    real token attends to one), no logits wanted; its KV cache and which slots are real."""
    device = next(model.parameters()).device
    ids = torch.zeros(len(rows), max(prefixes), dtype=torch.long)
    valid = torch.zeros(len(rows), max(prefixes), dtype=torch.long)
    for g, (row, q) in enumerate(zip(rows, prefixes)):
        ids[g, :q] = torch.tensor(row.full[:q])
        valid[g, :q] = 1
    return output_cache(model(input_ids=ids.to(device), use_cache=True, logits_to_keep=1)), valid


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
    masked = keeps_logits_by_mask(model)  # logits of the scored positions only: no pad's, no context's
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
        keep = scored[:, start:end] if masked else torch.ones(len(rows), end - start, dtype=torch.bool)
        if masked:
            kwargs["logits_to_keep"] = keep.to(device)
        out = model(input_ids=ids[:, start:end].to(device), use_cache=end < width, **kwargs)
        cache = output_cache(out) if end < width else None
        logits = out.logits.float().reshape(-1, out.logits.shape[-1])  # the kept positions, row by row
        del out
        chunk = targets[:, start:end][keep].to(device)
        picked = logits.gather(-1, chunk[:, None]).squeeze(-1) - torch.logsumexp(logits, dim=-1)
        logprob[:, start:end][keep] = picked.double().cpu()
        greedy[:, start:end][keep] = (logits.argmax(dim=-1) == chunk).cpu()
        del logits, picked
    totals = (logprob * scored).sum(dim=1)
    exact = (greedy | ~scored).all(dim=1)
    return [(float(t), bool(g)) for t, g in zip(totals, exact)]


def _sliding_window(model) -> int | None:
    """The model's attention window when some of its layers attend to a sliding window (None: all full)."""
    config = model.config.get_text_config()
    window = getattr(config, "sliding_window", None)
    return int(window) if window and getattr(config, "use_sliding_window", True) is not False else None
