"""Shared-context scoring (``llm/scoring.py``) gives every row's log-likelihood and greedy flag of the
full forward, lm-eval's way (each row alone, log-softmax of all its logits), whether the model returns
the scored positions' logits only or all of them, every chunk of an item's choices selecting from one
prefix cache that no chunk changes; the shared prefix is what the choices have in common short of their
first scored token; no forward produces more logits than the budget; near ties are the items a small
change (here 2e-4 nats) could flip (hand-computed)."""
import random

import pytest
import torch
import transformers
from packaging.version import Version

from forgetless.llm import scoring
from forgetless.llm.records import near_tie, near_ties
from forgetless.llm.scoring import Row, request_row, score_groups, shared, shared_prefix
from forgetless.models.loading import load_causal_lm


@pytest.fixture(scope="module")
def tiny(minilm_tokenizer):
    model, _ = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer, seed=3)
    with torch.no_grad():
        model.lm_head.weight.mul_(40)  # far from uniform: log-probabilities of very different sizes
    return model.eval()


def _full_forward(model, row: Row) -> tuple[float, bool]:
    """lm-eval's computation for one request: the whole input, log-softmax, the continuation's targets."""
    with torch.no_grad():
        logprobs = model(input_ids=torch.tensor([row.full[:-1]])).logits[0].float().log_softmax(-1)
    targets = torch.tensor(row.full[1:])[-row.scored:]
    picked = logprobs[-row.scored:].gather(-1, targets[:, None]).squeeze(-1)
    return float(picked.double().sum()), bool((logprobs[-row.scored:].argmax(-1) == targets).all())


def _groups(vocab: int, seed: int = 0) -> list[list[Row]]:
    """Items of 1-5 choices: shared contexts (ARC-like), a context ending differently per choice with one
    continuation (WinoGrande-like), one-token choices, lone rows, and contexts cut from the left."""
    rng = random.Random(seed)
    tokens = lambda n: [rng.randrange(5, vocab) for _ in range(n)]  # noqa: E731
    groups = []
    for number in range(14):
        context = tokens(rng.randint(1, 40))
        if number % 4 == 0:
            rows = [request_row(context + tokens(rng.randint(1, 3)), [7, 8, 9], 512) for _ in range(2)]
        elif number % 4 == 1:
            rows = [request_row(context, tokens(1), 512) for _ in range(4)]
        else:
            rows = [request_row(context, tokens(rng.randint(1, 9)), 512 if number != 2 else 20)
                    for _ in range(rng.randint(1, 5))]
        groups.append(rows)
    return groups


@pytest.mark.parametrize("masked", [True, False], ids=["scored-logits", "all-logits"])
@pytest.mark.parametrize("budget", [scoring.LOGITS_BUDGET, 3 * 4 * 30522], ids=["one-forward", "segments"])
def test_shared_context_equals_the_full_forward(tiny, monkeypatch, budget, masked):
    slices_by_mask = Version(transformers.__version__) >= Version("5.21")  # slice_logits_to_keep
    assert scoring.keeps_logits_by_mask(tiny) == slices_by_mask
    if masked and not slices_by_mask:
        pytest.skip(f"transformers {transformers.__version__} takes no logits_to_keep mask")
    monkeypatch.setattr(scoring, "LOGITS_BUDGET", budget)
    monkeypatch.setattr(scoring, "keeps_logits_by_mask", lambda model: masked)
    groups = _groups(30522)
    assert sum(shared(g) > 0 for g in groups) >= 8 and sum(shared(g) == 0 for g in groups) >= 2  # both paths
    scored = score_groups(tiny, groups, batch_size=6)
    for rows, values in zip(groups, scored):
        for row, (ll, greedy) in zip(rows, values):
            expected, expected_greedy = _full_forward(tiny, row)
            assert ll == pytest.approx(expected, abs=1e-4) and greedy == expected_greedy


def test_no_forward_produces_more_logits_than_the_budget(tiny, monkeypatch):
    budget = 5 * 4 * 30522  # five positions of one row's fp32 logits
    monkeypatch.setattr(scoring, "LOGITS_BUDGET", budget)
    sizes = []
    hook = tiny.lm_head.register_forward_hook(lambda module, args, out: sizes.append(out.numel() * 4))
    try:
        groups = _groups(30522, seed=1)
        score_groups(tiny, groups, batch_size=8)
    finally:
        hook.remove()
    widest = max(len(g) for g in groups)
    assert sizes and max(sizes) <= max(budget, widest * 4 * 30522)  # one position per row at least
    assert sum(s > budget for s in sizes) <= sum(len(g) > 5 for g in groups)


def test_the_shared_prefix_stops_before_the_first_scored_token():
    arc = [request_row([1, 2, 3, 4], [5, 6], 100), request_row([1, 2, 3, 4], [7], 100)]
    assert shared_prefix(arc) == 3  # the context's last token runs with each choice (it predicts the first)
    wino = [request_row([1, 2, 3, 10], [8, 9], 100), request_row([1, 2, 3, 11, 12], [8, 9], 100)]
    assert shared_prefix(wino) == 3
    assert shared_prefix([request_row([1, 2, 3], [4], 100)]) == 0  # a lone row shares nothing
    assert shared_prefix([request_row([1, 2], [3], 100), request_row([9, 2], [3], 100)]) == 0
    # sharing pays when it saves at least half of what the rows run alone: ARC 1 × 3 ≥ ½ × (2 + 1); here 3 < ½ × (4 + 5)
    piqa = [request_row([1, 2, 3, 4], [5, 6, 7, 8], 100), request_row([1, 2, 3, 4], [9, 9, 9, 9, 9], 100)]
    assert shared_prefix(piqa) == 3 and shared(piqa) == 0 and shared(arc) == 3
    cut = request_row(list(range(10, 30)), [5, 6], 8)  # lm-eval cuts from the left: 8 input tokens
    assert cut.full == (23, 24, 25, 26, 27, 28, 29, 5, 6) and cut.length == 8 and cut.scored == 2


def test_near_ties_are_the_picks_a_small_change_could_flip():
    item = {"ll": [-10.0, -10.0003, -12.0], "chars": [10, 20, 5], "tokens": [1, 1, 1], "acc": 1, "acc_norm": 0}
    # acc, 2e-4 per token, one token each: -10 leads -10.0003 by 3e-4 < 2e-4 + 2e-4 → a near tie
    assert near_tie(item, "acc", 2e-4) is True
    # acc_norm: -10/10 = -1.0, -10.0003/20 = -0.500015 (best), -12/5 = -2.4; the best leads -1.0 by 0.5
    assert near_tie(item, "acc_norm", 2e-4) is False
    assert near_tie({**item, "ll": [-10.0, -10.0005, -12.0]}, "acc", 2e-4) is False  # 5e-4 ≥ 4e-4
    assert near_tie({**item, "ll": [-10.0, -10.0005, -12.0], "tokens": [2, 1, 1]}, "acc", 2e-4) is True  # < 6e-4
    close = {"ll": [-3.0, -6.0001], "chars": [10, 20], "tokens": [1, 1]}  # per char -0.3 vs -0.300005
    assert near_tie(close, "acc_norm", 2e-4) is True and near_tie(close, "acc", 2e-4) is False  # 5e-6 < 2e-5 + 1e-5
    assert near_tie({k: v for k, v in close.items() if k != "tokens"}, "acc_norm") is False  # lm-eval's own: none
    records = {"primary": "acc_norm", "items": [{**item, "ll": [-10.0, -10.00005, -12.0]}, {**item, "ll": [-1.0, -5.0, -9.0]}]}
    assert near_ties(records) == {"acc": 1, "acc_norm": 0}  # the default: records.TOLERANCE, 5e-5 per token
    assert near_tie({**item, "ll": [-10.0, -10.00011, -12.0]}, "acc") is False  # 1.1e-4 ≥ 2 × 5e-5


def test_chunks_end_where_the_lengths_drop(monkeypatch):
    """Rows of 10, 10, 2 and 2 tokens, 8 tokens a forward: one chunk runs 8 + 4 × 10 = 48 tokens, two
    run 8 + 2 × 10 + 8 + 2 × 2 = 40 (hand-computed): two; four rows of 5 stay one chunk (8 + 20 < 2 × 8 + 20)."""
    def chunked(lengths, batch_size=4):
        groups = [[Row(tuple(range(n + 1)), 1)] for n in lengths]
        pairs = [(i, 0) for i in range(len(groups))]
        return [[groups[i][0].length for i, _ in chunk]
                for chunk in scoring._chunks(pairs, groups, [0] * len(groups), batch_size, 100, 0)]

    monkeypatch.setattr(scoring, "FORWARD_COST", 8)
    assert chunked([2, 10, 2, 10]) == [[10, 10], [2, 2]]
    assert chunked([5, 5, 5, 5]) == [[5, 5, 5, 5]]
    monkeypatch.setattr(scoring, "ROW_TOKENS", 10)  # a chunk: at most 4 × batch_size rows and 10 × batch_size tokens
    assert sorted(map(len, chunked([1] * 14, batch_size=3))) in ([2, 12], [7, 7])  # at most 12 a chunk: 30 tokens
    assert all(len(c) * c[0] <= 30 for c in chunked([9, 8, 7, 6, 5, 4, 3], batch_size=3))
