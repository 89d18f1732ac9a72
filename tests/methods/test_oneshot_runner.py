"""The fast one-shot calibration against straightforward references: linears that share a Hessian
solved in one sweep equal one sweep per linear (bit for bit); Wanda, SparseGPT and GPTQ through the
sequential runner equal a plain loop that runs the whole model for every layer, collects each
linear's inputs and solves each linear alone; Wanda's sampled Hessian by hand; the progress estimate
line. Tiny models built from a config, no task."""
import pytest
import torch
import transformers

from forgetless import progress
from forgetless.methods._shared.hessian import HessianAccumulator, relative_reconstruction_error
from forgetless.methods.gptq.solver import gptq_quantize, gptq_quantize_many
from forgetless.methods.sparsegpt.solver import sparsegpt_prune, sparsegpt_prune_many
from forgetless.methods.wanda.metric import wanda_mask
from forgetless.quantization.format import QuantFormat
from forgetless.registry import METHODS


def correlated_hessian(width=32, tokens=500, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, width, generator=g, dtype=torch.float64) @ (
        torch.eye(width, dtype=torch.float64) + torch.randn(width, width, generator=g, dtype=torch.float64) / 4)
    return 2 * x.T @ x / tokens


@pytest.mark.parametrize("options", [{"nm": None}, {"nm": (2, 4)}, {"nm": (4, 8)}])
def test_sparsegpt_one_sweep_for_several_linears_equals_one_each(options):
    h = correlated_hessian()
    g = torch.Generator().manual_seed(1)
    weights = [torch.randn(rows, 32, generator=g) for rows in (12, 4, 4)]  # q / k / v-like
    weights[1][:, :3] = 0.0  # exact zeros in one of them
    together = sparsegpt_prune_many(weights, h, 0.5, block_size=8, **options)
    for weight, result in zip(weights, together):
        alone = sparsegpt_prune(weight, h, 0.5, block_size=8, **options)
        assert torch.equal(result.weight, alone.weight) and torch.equal(result.keep, alone.keep)


@pytest.mark.parametrize("options", [{}, {"static_groups": True}, {"act_order": True}, {"group_size": 12},
                                     {"group_size": -1, "symmetric": True}])
def test_gptq_one_sweep_for_several_linears_equals_one_each(options):
    h = correlated_hessian()
    g = torch.Generator().manual_seed(2)
    weights = [torch.randn(rows, 32, generator=g) for rows in (12, 20)]  # gate / up-like
    options = {"group_size": 8, **options}
    fmt = QuantFormat(3, "int", options["group_size"], options.get("symmetric", False))
    order = {key: options[key] for key in ("act_order", "static_groups") if key in options}
    together = gptq_quantize_many(weights, h, fmt, block_size=16, **order)
    for weight, result in zip(weights, together):
        alone = gptq_quantize(weight, h, bits=3, block_size=16, **options)
        for field in ("codes", "scales", "zeros"):
            assert torch.equal(getattr(result, field), getattr(alone, field)), field


def test_wanda_accumulator_sums_norms_over_every_token_and_the_hessian_over_every_kth():
    acc = HessianAccumulator(2, hessian_every=2)
    first = torch.tensor([[[1.0, 2.0], [3.0, -1.0], [9.0, 9.0]]])  # the padded third token counts nothing
    acc.add(first, torch.tensor([[True, True, False]]))
    acc.add(torch.tensor([[[0.0, 5.0], [2.0, 2.0]]]))
    # real tokens in order: (1, 2) (3, −1) (0, 5) (2, 2); every 2nd from the first: (1, 2) and (0, 5)
    assert (acc.seen, acc.tokens) == (4, 2)
    torch.testing.assert_close(acc.column_norms(), torch.tensor([14.0, 34.0], dtype=torch.float64).sqrt())
    torch.testing.assert_close(acc.hessian, torch.tensor([[1.0, 2.0], [2.0, 29.0]], dtype=torch.float64))  # 2/2 · XᵀX
    w, w_hat = torch.tensor([[1.0, -1.0], [0.5, 2.0]]), torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    # ‖ΔW X‖ / ‖W X‖ over the kept rows (1, 2), (0, 5): WX = (−1, −5; 4.5, 10), ΔW X = (−2, −5; 0.5, 0)
    # (2 rows for 2 inputs: through H; with a single kept row, straight from it: the same number)
    direct = ((2.0 ** 2 + 5.0 ** 2 + 0.5 ** 2) / (1 + 25 + 4.5 ** 2 + 100)) ** 0.5
    # float32 weights: the error is computed in float32 (hessian.error_dtype), to about 6 digits
    assert acc.relative_error(w, w_hat) == pytest.approx(direct, rel=1e-6)
    assert acc.relative_error(w.double(), w_hat.double()) == pytest.approx(direct, rel=1e-12)
    one = HessianAccumulator(2, hessian_every=4)  # kept: row (1, 2) only, WX = (−1, 4.5), ΔW X = (−2, 0.5)
    one.add(first, torch.tensor([[True, True, False]]))
    assert one.tokens == 1 and one.relative_error(w, w_hat) == pytest.approx((4.25 / 21.25) ** 0.5, rel=1e-6)
    assert one.relative_error(w, w_hat) == pytest.approx(relative_reconstruction_error(w, w_hat, one.hessian), rel=1e-6)
    full = HessianAccumulator(2)
    full.add(first, torch.tensor([[True, True, False]]))
    torch.testing.assert_close(full.column_norms(), torch.tensor([10.0, 5.0], dtype=torch.float64).sqrt())
    with pytest.raises(ValueError, match="hessian_every must be >= 1"):
        HessianAccumulator(2, hessian_every=0)


def tiny_llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


def calibration_batches():
    g = torch.Generator().manual_seed(3)
    batches = []
    for rows, length in [(4, 12), (4, 9)]:
        mask = torch.ones(rows, length, dtype=torch.long)
        mask[1, :3] = 0  # left padding
        batches.append({"input_ids": torch.randint(0, 64, (rows, length), generator=g), "attention_mask": mask})
    return batches


def reference(model, batches, solve, every=1):
    """Layer after layer: run the whole model (earlier layers already compressed), collect each
    linear's inputs on the real tokens, and compress each linear alone from ``X`` itself."""
    for layer in model.model.layers:
        linears = {name: m for name, m in layer.named_modules() if isinstance(m, torch.nn.Linear)}
        inputs = {name: [] for name in linears}
        hooks = [m.register_forward_hook(lambda m, a, o, name=name: inputs[name].append(a[0])) for name, m in
                 linears.items()]
        with torch.no_grad():
            for batch in batches:
                model(**batch, use_cache=False)
        for hook in hooks:
            hook.remove()
        real = torch.cat([b["attention_mask"].bool().reshape(-1) for b in batches])
        for name, module in linears.items():
            x = torch.cat([t.reshape(-1, t.shape[-1]) for t in inputs[name]])[real].double()
            sampled = x[::every]
            solve(module, x, 2 * sampled.T @ sampled / len(sampled))
    return model


@pytest.mark.parametrize("method, options", [("wanda", {"pattern": "2:4"}), ("wanda", {"sparsity": 0.5}),
                                             ("sparsegpt", {"pattern": "2:4", "block_size": 8}),
                                             ("sparsegpt", {"sparsity": 0.5, "block_size": 8}),
                                             # asymmetric grids: with the symmetric default, round-off between
                                             # the two Hessian sums moved 2 of q_proj's codes by one step (ties)
                                             ("gptq", {"group_size": 8, "asymmetric": True}),
                                             ("gptq", {"group_size": 8, "asymmetric": True, "static_groups": True})])
def test_methods_through_the_runner_equal_a_straightforward_reference(method, options):
    config = METHODS.make_config(method, options)
    errors = []

    def solve(module, x, h):
        w = module.weight.data
        if method == "wanda":
            new = w * wanda_mask(w, x.square().sum(dim=0).sqrt(), config.sparsity, config.nm)
        elif method == "sparsegpt":
            new = sparsegpt_prune(w, h, config.sparsity, nm=config.nm, block_size=8).weight
        else:
            new = gptq_quantize(w, h, bits=4, group_size=8, symmetric=not config.asymmetric,
                                static_groups=config.static_groups).dequantize()
        errors.append((relative_reconstruction_error(w, new, h), len(x[::16 if method == "wanda" else 1])))
        w.copy_(new)

    expected = reference(tiny_llama(), calibration_batches(), solve, every=16 if method == "wanda" else 1)
    compressor = METHODS.build(config)
    model = tiny_llama()
    compressor.calibrate(model, calibration_batches())
    for (name, got), want in zip(model.named_parameters(), expected.parameters()):
        if method == "wanda" or "layers" not in name or "norm" in name:
            assert torch.equal(got, want), name  # no weight update: the very same masks
        else:
            assert torch.equal(got == 0, want == 0), name  # the same zeros
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    for entry, (error, tokens) in zip(compressor.layers, errors):
        assert entry["reconstruction_error"] == pytest.approx(error, rel=1e-4, abs=1e-6)
        if method != "gptq":
            assert entry["error_tokens"] == tokens  # Wanda: every 16th of the 7 · 4 − 3 + 9 · 4 − 3 tokens


def test_estimate_line_after_the_first_unit(capsys):
    before = progress.enabled
    try:
        progress.enabled = None
        progress.estimate("wanda: decoder", 7.1, "layer", 1, 30)
        assert capsys.readouterr().err == ("[forgetless] wanda: decoder: ~3.4 min for the 29 remaining layers "
                                           "(measured 7.1 s for layer 1)\n")
        progress.estimate("wanda: decoder", 0.2, "layer", 1, 30)  # under 10 s left: no line
        progress.enabled = False  # --no-progress
        progress.estimate("wanda: decoder", 7.1, "layer", 1, 30)
        assert capsys.readouterr().err == ""
    finally:
        progress.enabled = before
    assert [progress.duration(s) for s in (42, 204, 1500)] == ["~42 s", "~3.4 min", "~25 min"]
