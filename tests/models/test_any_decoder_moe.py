"""Generic calibration beyond the matrix (``test_any_decoder.py``): per-layer inputs of mixed layer
types, a model whose loop changes hidden states between blocks, ``targets`` / ``ignore``, and
mixture-of-experts (each expert calibrated on exactly its routed real tokens, identity statistics for
an expert no token reaches, experts that cannot run one by one)."""
import copy

import pytest
import torch

import forgetless
from forgetless.errors import OptionError, UnsupportedModelError
from forgetless.methods._shared.sequential import capture_block_inputs, run_layer_by_layer
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.models.adapters import get_adapter
from forgetless.models.experts import EXPERT_CODES
from forgetless.quantization.ints import round_to_nearest

from any_decoder import TEXTS, char_tokenizer, left_padded, tiny_model

torch.set_num_threads(1)
MIXED = ["sliding_attention", "full_attention", "sliding_attention"]


def _outputs(model, run):
    """Each block's output while ``run()`` runs (its last call)."""
    seen = {}
    blocks = get_adapter(model).stacks(model)["decoder"]
    hooks = [b.register_forward_hook(lambda m, a, o, i=i: seen.__setitem__(i, o[0] if isinstance(o, tuple) else o))
             for i, b in enumerate(blocks)]
    try:
        run()
    finally:
        for hook in hooks:
            hook.remove()
    return [seen[i] for i in range(len(blocks))]


def test_each_layer_type_gets_its_own_mask_and_the_blocks_their_true_inputs():
    """Gemma 3 with a sliding window of 3 on blocks 0 and 2, full attention on block 1: the capture pass
    records a different mask for block 1 than for block 0 (reusing block 0's would be wrong), and the
    blocks carried one by one compute exactly what the unmodified model computes."""
    model = tiny_model("gemma3_text", layer_types=MIXED, sliding_window=3)
    ids, mask = left_padded()
    batch = {"input_ids": ids, "attention_mask": mask}
    blocks = get_adapter(model).stacks(model)["decoder"]
    inputs = capture_block_inputs(model, blocks, [batch]).inputs
    masks = [kwargs["attention_mask"] for _, kwargs in (inputs[i][0] for i in range(3))]
    assert torch.equal(masks[0], masks[2]) and not torch.equal(masks[0], masks[1])
    with torch.no_grad():
        expected = _outputs(model, lambda: model(**batch, use_cache=False))
    carried = _outputs(model, lambda: run_layer_by_layer(model, [batch], lambda *args: None))
    for got, want in zip(carried, expected):
        assert torch.equal(got, want)


def test_hidden_states_changed_between_blocks_are_one_clear_error():
    """RWKV halves its hidden states every ``rescale_every`` blocks in its own loop: carrying them block
    by block would skip that, so calibration refuses."""
    model = tiny_model("rwkv", rescale_every=1)
    with pytest.raises(UnsupportedModelError, match="hidden states change between blocks 0 and 1"):
        forgetless.apply(model, WandaConfig(calibration_examples=4), calibration=TEXTS, tokenizer=char_tokenizer())


def test_targets_ignore_and_the_share_of_parameters_on_the_card():
    model = tiny_model("mixtral")
    experts = {n: p.clone() for n, p in model.named_parameters() if ".experts." in n}
    method = forgetless.registry.METHODS.build(WandaConfig(pattern="2:4", targets=["re:.*self_attn\\.[qk]_proj"],
                                                           calibration_examples=4))
    ctx = _context()
    method.compress(model, ctx)
    assert all(torch.equal(p, experts[n]) for n, p in model.named_parameters() if n in experts)
    attention = [m for n, m in model.named_modules() if n.endswith(("q_proj", "k_proj"))]
    assert all(int((m.weight.reshape(-1, 4) != 0).sum(1).max()) == 2 for m in attention)
    weights = sum(m.weight.numel() for m in attention)  # 3 layers × (64·64 + 32·64)
    total = sum(p.numel() for p in model.parameters())
    section = method.report_section()["sparsity"]["modules"]
    assert (section["modules"], section["weights"], section["experts"]) == (6, 3 * (64 * 64 + 32 * 64), 0)
    assert section["share"] == weights / total
    assert any(f"{100 * weights / total:.1f}% of the model's {total:,} parameters" in note for note in ctx.notes)


def _context():
    from forgetless.config import TrainConfig
    from forgetless.methods.base import CompressionContext

    return CompressionContext(task=None, tokenizer=char_tokenizer(), teacher=None, work_dir=None,
                              train_config=TrainConfig(progress=False), seed=0, kind=None, calibration=TEXTS)


@pytest.mark.parametrize("options, message", [
    ({"targets": ["re:.*lm_head"]}, "targets=re:.*lm_head: matches no linear layer inside the decoder blocks"),
    ({"ignore": ["NoSuchLinear"]}, "ignore=NoSuchLinear: matches no linear layer"),
    ({"targets": ["re:.*q_proj"], "ignore": ["re:.*q_proj"]}, "leave no linear layer to compress"),
])
def test_patterns_are_checked_against_the_model_before_any_work(options, message):
    with pytest.raises(OptionError, match=message):
        forgetless.apply(tiny_model("mixtral"), WandaConfig(**options), calibration=TEXTS, tokenizer=char_tokenizer())


def test_a_pattern_that_is_no_regular_expression_fails_when_the_config_is_built():
    with pytest.raises(OptionError, match=r"ignore=re:\(\(: not a regular expression"):
        WandaConfig(ignore=["re:(("])


def test_each_expert_is_calibrated_on_its_own_real_tokens():
    """The Hessian of expert e's projections counts exactly the (real token, slot) pairs the router
    sent to e; padding never counts."""
    model = tiny_model("mixtral")
    ids, mask = left_padded()
    routed = {}

    def record(module, args, output):
        routed.setdefault(module, output[2])  # (tokens, top-k) expert indices of the first call

    router = model.model.layers[0].mlp.gate
    hook = router.register_forward_hook(record)
    counts = {}

    def compress(stack, index, layer, stats):
        counts.update({name: acc.reached for name, (_, acc) in stats.items()} if index == 0 else {})

    run_layer_by_layer(model, [{"input_ids": ids, "attention_mask": mask}], compress)
    hook.remove()
    real = mask.reshape(-1).bool()
    chosen = routed[router][real]
    for expert in range(4):
        expected = int((chosen == expert).sum())
        assert counts[f"mlp.experts.{expert}.gate_up_proj"] == counts[f"mlp.experts.{expert}.down_proj"] == expected
    assert counts["self_attn.q_proj"] == int(mask.sum())


def test_an_expert_no_token_reaches_is_rounded_to_nearest_and_counted():
    model = tiny_model("mixtral")
    original = model.model.layers[1].mlp.experts.gate_up_proj.detach()[3].clone()

    def never_three(module, args, output):
        logits, scores, index = output
        return logits, scores, torch.where(index == 3, torch.zeros_like(index), index)

    for layer in model.model.layers:
        layer.mlp.gate.register_forward_hook(never_three)
    method = forgetless.registry.METHODS.build(GptqConfig(bits=4, group_size=16, calibration_examples=4))
    ctx = _context()
    method.compress(model, ctx)
    codes = getattr(model.model.layers[1].mlp.experts, EXPERT_CODES)[("gate_up_proj", 3)]
    expected = round_to_nearest(original, 4, 16, symmetric=True)
    assert torch.equal(codes.codes, expected.codes) and torch.equal(codes.scales, expected.scales)
    unreached = [e for e in method.layers if e.get("no_calibration_tokens")]
    assert len(unreached) == method.unreached == 3 * 2  # expert 3's two projections in each of 3 layers
    assert any("6 linear layers (experts the router sent no calibration token to)" in n and "round-to-nearest" in n
               for n in ctx.notes)


def test_experts_that_cannot_run_one_by_one_are_refused_unless_ignored():
    model = tiny_model("jetmoe")
    with pytest.raises(UnsupportedModelError, match=r"model.layers.0.mlp.input_linear \(JetMoeParallelExperts\) keeps"):
        forgetless.apply(copy.deepcopy(model), WandaConfig(calibration_examples=4), calibration=TEXTS,
                         tokenizer=char_tokenizer())
    pruned = forgetless.apply(model, WandaConfig(calibration_examples=4, ignore=["re:.*(input|output)_linear$"]),
                              calibration=TEXTS, tokenizer=char_tokenizer())
    assert float((pruned.model.layers[0].self_attention.kv_proj.weight == 0).float().mean()) == 0.5


def test_layer_removal_cuts_per_layer_lists_and_renumbers_index_lists():
    """Qwen2-MoE with a dense MLP in block 1 (``mlp_only_layers``) and a sliding window on block 1 only
    (``layer_types``): keeping blocks 1 and 2 makes the dense block block 0 and keeps each block's
    attention type; the cut config builds exactly the kept blocks."""
    from forgetless.models import surgery
    from forgetless.models.layer_removal import check_cut, cut_config

    model = tiny_model("qwen2_moe", mlp_only_layers=[1], use_sliding_window=True, sliding_window=3,
                       layer_types=["full_attention", "sliding_attention", "full_attention"])
    changes = cut_config(model.config, [1, 2])
    assert changes == {"num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
                       "mlp_only_layers": [0]}
    check_cut(model, changes, [1, 2])
    with pytest.raises(UnsupportedModelError, match="cannot describe kept block 1 as block 0"):
        check_cut(model, {**changes, "mlp_only_layers": []}, [1, 2])  # block 1's dense MLP would become experts
    cut = surgery.drop_layers(model, "decoder", [1, 2])
    assert type(cut.model.layers[0].mlp).__name__ == "Qwen2MoeMLP" and cut.config.mlp_only_layers == [0]
