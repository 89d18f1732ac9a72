"""Hand-checked maths of the one-shot LLM pruning / quantization solvers (Wanda, SparseGPT, GPTQ's
sweep against a direct OBS solve; the rest of GPTQ in ``test_gptq.py``): pure tensors, no model."""

import pytest
import torch

from forgetless.methods._shared.hessian import (
    HessianAccumulator,
    relative_reconstruction_error,
)
from forgetless.methods._shared.masks import (
    NmCheck,
    nm_check,
    nm_keep_mask,
    nm_nonzeros,
    row_keep_mask,
)
from forgetless.methods.gptq.solver import gptq_quantize
from forgetless.methods.sparsegpt.solver import sparsegpt_prune
from forgetless.methods.wanda.metric import wanda_mask, wanda_scores


def calibration(in_features=24, tokens=400, seed=0):
    """Correlated, unevenly scaled inputs (as real activations are) and their accumulator."""
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(in_features, in_features, generator=g, dtype=torch.float64)
    scale = torch.linspace(0.2, 3.0, in_features, dtype=torch.float64)
    x = (torch.randn(tokens, in_features, generator=g, dtype=torch.float64) @ mix) * scale
    acc = HessianAccumulator(in_features)
    acc.add(x[: tokens // 2])
    acc.add(x[tokens // 2:])
    return x, acc


def test_hessian_and_norms_by_hand():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 5.0]])
    acc = HessianAccumulator(2)
    acc.add(x.reshape(1, 3, 2), token_mask=torch.tensor([[True, True, False]]))  # the padded token counts nothing
    assert acc.tokens == 2
    torch.testing.assert_close(acc.hessian, torch.tensor([[10.0, -1.0], [-1.0, 5.0]], dtype=torch.float64))  # 2/2 · XᵀX
    torch.testing.assert_close(acc.column_norms(), torch.tensor([10.0, 5.0], dtype=torch.float64).sqrt())


def test_relative_reconstruction_error_equals_direct():
    x, acc = calibration()
    w = torch.randn(8, 24, dtype=torch.float64)
    w_hat = w * (torch.rand_like(w) > 0.5)
    direct = ((w - w_hat) @ x.T).norm() / (w @ x.T).norm()
    assert relative_reconstruction_error(w, w_hat, acc.hessian) == pytest.approx(float(direct), rel=1e-10)
    # a float32 weight's error is computed in float32 (the card's figure, not an input of the solves): 6 digits
    assert relative_reconstruction_error(w.float(), w_hat.float(), acc.hessian) == pytest.approx(float(direct), rel=1e-5)
    sampled = HessianAccumulator(24, hessian_every=4)  # 16 sampled tokens < 24 inputs: the error from the rows
    sampled.add(x[:64].float())
    rows = x[:64:4].T
    expected = ((w - w_hat) @ rows).norm() / (w @ rows).norm()
    assert sampled.relative_error(w.float(), w_hat.float()) == pytest.approx(float(expected), rel=1e-5)


def test_wanda_scores_and_masks_by_hand():
    w = torch.tensor([[1.0, -4.0, 2.0, 0.5], [-3.0, 1.0, 1.0, 2.0]])
    norms = torch.tensor([2.0, 0.25, 1.0, 4.0])
    expected = torch.tensor([[2.0, 1.0, 2.0, 2.0], [6.0, 0.25, 1.0, 8.0]], dtype=torch.float64)
    torch.testing.assert_close(wanda_scores(w, norms), expected)
    # per output row: row 0 drops its lowest (col 1) and, of the tied 2.0s, keeps the lower indices
    assert wanda_mask(w, norms, 0.5).tolist() == [[True, False, True, False], [True, False, False, True]]
    # 2:4 on one group of four per row: the same rule, the same choice
    assert wanda_mask(w, norms, nm=(2, 4)).tolist() == [[True, False, True, False], [True, False, False, True]]
    with pytest.raises(ValueError, match="do not match"):
        wanda_scores(w, norms[:3])


def test_nm_masks_keep_exactly_n_of_every_m():
    scores = torch.rand(16, 64, generator=torch.Generator().manual_seed(1))
    for n, m in [(2, 4), (1, 4), (4, 8)]:
        mask = nm_keep_mask(scores, n, m)
        assert (mask.reshape(16, -1, m).sum(dim=2) == n).all()
        kept_min = torch.where(mask, scores, torch.inf).reshape(16, -1, m).min(dim=2).values
        dropped_max = torch.where(mask, -torch.inf, scores).reshape(16, -1, m).max(dim=2).values
        assert (kept_min >= dropped_max).all()  # the n highest of each group are the ones kept
        assert nm_check(scores * mask, n, m).exact and not nm_check(scores, n, m).at_most_n
    assert (row_keep_mask(scores, 0.25).sum(dim=1) == 48).all()
    with pytest.raises(ValueError, match="multiple of M"):
        nm_keep_mask(scores[:, :6], 2, 4)


def test_nm_check_tells_exactly_n_from_at_most_n_and_counts_groups_short_in_the_base():
    """2:4, one row of four groups: exactly 2 | 1 kept where the base had 1 non-zero already | 1 kept
    where the base had 4 | 3 kept (broken)."""
    base = torch.tensor([[1.0, 5.0, 2.0, 6.0, 0.0, 0.0, 3.0, 0.0, 5.0, 6.0, 7.0, 4.0, 1.0, 2.0, 3.0, 8.0]])
    pruned = torch.tensor([[1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 4.0, 1.0, 2.0, 3.0, 0.0]])
    short = nm_nonzeros(base, 4) < 2
    assert nm_nonzeros(pruned, 4).tolist() == [[2, 1, 1, 3]] and short.tolist() == [[False, True, False, False]]
    check = nm_check(pruned, 2, 4, short)
    assert check == NmCheck(2, 4, groups=4, exactly_n=1, fewer_than_n=2, fewer_base_zero=1, more_than_n=1)
    assert not check.at_most_n and not check.exact
    assert nm_check(pruned, 2, 4).fewer_base_zero == 0  # no base given: none attributed to it
    fixed = pruned.clone()
    fixed[0, 12] = 0.0  # the broken group now keeps 2
    check = nm_check(fixed, 2, 4, short)
    assert check.at_most_n and not check.exact and check.as_dict() == {
        "pattern": "2:4", "groups": 4, "exactly_n": 2, "fewer_than_n": 2, "fewer_base_zero": 1, "more_than_n": 0,
        "at_most_n": True, "exact": False}
    assert (check + nm_check(base[:, :8] * 0 + 1, 2, 4)).more_than_n == 2  # summed over weights
    with pytest.raises(ValueError, match="cannot add a 4:8 check to a 2:4 one"):
        check + NmCheck(4, 8)


def obs_reference(weight, hessian, keep=None, quantize=None, damp=0.01):
    """The OBS sweep solved directly: for each column j (left to right) invert the Hessian of the
    columns not yet fixed, fix column j (prune where ``keep`` is False, or ``quantize`` it) and
    move the remaining columns by −δ·[H_F⁻¹]_{j,F} (SparseGPT eq. 3 / GPTQ eq. 2-3)."""
    h = hessian.clone()
    h.diagonal().add_(damp * h.diagonal().mean())
    w = weight.clone()
    for j in range(w.shape[1]):
        inverse = torch.linalg.inv(h[j:, j:])
        target = torch.where(keep[:, j], w[:, j], torch.zeros_like(w[:, j])) if keep is not None else quantize(j, w[:, j])
        delta = (w[:, j] - target) / inverse[0, 0]
        w[:, j:] -= delta.unsqueeze(1) * inverse[0].unsqueeze(0)
        w[:, j] = target
    return w


@pytest.mark.parametrize("nm", [None, (2, 4)])
def test_sparsegpt_update_equals_direct_obs_solve(nm):
    x, acc = calibration()
    w = torch.randn(10, 24, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    result = sparsegpt_prune(w, acc.hessian, 0.5, nm=nm, block_size=8)  # 3 blocks: lazy updates across them
    assert result.keep.sum() == 120  # exactly half of 240
    reference = obs_reference(w, acc.hessian, keep=result.keep)
    torch.testing.assert_close(result.weight, reference, atol=1e-5, rtol=0)
    assert (result.weight[~result.keep] == 0).all()
    if nm:
        assert nm_check(result.weight, *nm).exact


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sparsegpt_reconstructs_better_than_magnitude_and_wanda(seed):
    """Features of unequal scale, moderately correlated (the OBS update has something to use)."""
    g = torch.Generator().manual_seed(seed)
    mix = torch.eye(64, dtype=torch.float64) + torch.randn(64, 64, generator=g, dtype=torch.float64) / 8
    x = (torch.randn(2000, 64, generator=g, dtype=torch.float64) * torch.linspace(0.2, 3.0, 64, dtype=torch.float64)) @ mix
    acc = HessianAccumulator(64)
    acc.add(x)
    w = torch.randn(32, 64, dtype=torch.float64, generator=g)
    h = acc.hessian
    for nm in [None, (2, 4)]:
        magnitude = w * (nm_keep_mask(w.abs(), *nm) if nm else row_keep_mask(w.abs(), 0.5))
        wanda = w * wanda_mask(w, acc.column_norms(), 0.5, nm)
        sparse = sparsegpt_prune(w, h, 0.5, nm=nm).weight
        errors = [relative_reconstruction_error(w, m, h) for m in (magnitude, wanda, sparse)]
        assert errors[2] < min(errors[:2]), errors


def test_gptq_equals_direct_obs_solve():
    """Natural order: replaying the sweep by direct inversion, with the grids GPTQ chose (taken per
    group as it went), gives the same weights (lazy block updates across 2 blocks, 4 groups)."""
    from forgetless.quantization.ints import round_codes

    x, acc = calibration(in_features=32, tokens=600)
    w = torch.randn(12, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    q = gptq_quantize(w, acc.hessian, bits=4, group_size=8, block_size=16)
    s, z = q.scales.double(), q.zeros.double()
    quantize = lambda j, column: s[:, j // 8] * (round_codes(column, s[:, j // 8], z[:, j // 8], 4) - z[:, j // 8])
    torch.testing.assert_close(q.dequantize().double(), obs_reference(w, acc.hessian, quantize=quantize), atol=1e-5,
                               rtol=0)


def test_sequential_runner_feeds_each_layer_what_the_whole_model_would():
    """Nothing compressed: the inputs the runner gives layer i equal the model's hidden state i,
    and each Linear's Hessian counts exactly the real (unpadded) tokens."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from forgetless.methods._shared.sequential import run_layer_by_layer

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)).eval()
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :2] = 0  # left padding in the second row
    batches = [{"input_ids": ids, "attention_mask": mask}]
    with torch.no_grad():
        expected = model(**batches[0], output_hidden_states=True).hidden_states
    seen = []

    def record(stack, index, layer, stats):
        seen.append((index, {name: acc.tokens for name, (_, acc) in stats.items()}))
        return index

    captured = {i: [] for i in range(3)}
    hooks = [layer.register_forward_pre_hook(
        lambda m, a, k, i=i: captured[i].append((a[0] if a else k["hidden_states"]).clone()), with_kwargs=True)
        for i, layer in enumerate(model.model.layers)]
    reports = run_layer_by_layer(model, batches, record)
    for h in hooks:
        h.remove()
    assert reports == {"decoder": [0, 1, 2]}
    # every layer is reached by the capture pass (layer 0 runs, the others pass its output on); every
    # layer then runs twice (statistics, outputs) but the last, whose outputs feed nothing: once
    assert [len(captured[i]) for i in range(3)] == [3, 3, 2]
    for i in range(3):
        torch.testing.assert_close(captured[i][0], expected[min(i, 1)], atol=1e-6, rtol=0)
        for hidden in captured[i][1:]:
            torch.testing.assert_close(hidden, expected[i], atol=1e-6, rtol=0)
    assert all(tokens == 12 for _, counts in seen for tokens in counts.values())  # 7 + 5 real tokens
    assert set(seen[0][1]) == {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}
