"""Decoder-only adapters (Llama with grouped-query attention, Qwen2, Qwen3, Mistral, GPT-2): masked ==
sliced for logits and for greedy generation with a KV cache, exact parameter counts per KV group,
layer removal (renumbering, per-layer config lists), save → reload in a fresh process,
sequence-classification variants, and magnitude pruning's weight list."""
import copy
import json
import subprocess
import sys

import pytest
import torch
import transformers

from forgetless.methods._shared.magnitude import MagnitudePruner
from forgetless.models import io, surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates

torch.set_num_threads(1)
ARCHS = ["llama", "qwen2", "qwen3", "mistral", "gpt2"]
VOCAB, PAD = 97, 0
# every decoder layer: 4 query heads of size 8; the GQA families have 2 key/value heads (G = 2),
# so their prunable units are 2 key/value groups per layer, GPT-2's are its 4 heads
UNITS = {"llama": 2, "qwen2": 2, "qwen3": 2, "mistral": 2, "gpt2": 4}


def tiny_config(arch: str, num_labels: int = 3):
    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, pad_token_id=PAD, initializer_range=0.2,
                  num_labels=num_labels)
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "qwen2":  # layers >= max_window_layers use a sliding window: layer_types = [full, sliding, sliding]
        return transformers.Qwen2Config(**common, use_sliding_window=True, sliding_window=4, max_window_layers=1)
    if arch == "qwen3":
        return transformers.Qwen3Config(**common, head_dim=8)
    if arch == "mistral":
        return transformers.MistralConfig(**common, sliding_window=4)
    return transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=3, n_head=4, n_inner=48, n_positions=64,
                                   pad_token_id=PAD, bos_token_id=1, eos_token_id=2, initializer_range=0.2,
                                   num_labels=num_labels)


def tiny(arch: str, head: str = "lm", seed: int = 0):
    torch.manual_seed(seed)
    auto = transformers.AutoModelForCausalLM if head == "lm" else transformers.AutoModelForSequenceClassification
    return auto.from_config(tiny_config(arch)).eval()


def inputs():
    """Two rows; the second is left-padded (generation) — see ``right_padded`` for classification."""
    ids = torch.randint(1, VOCAB, (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    ids[1, :2], mask[1, :2] = PAD, 0
    return ids, mask


def generate(model, ids, mask):
    return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=5, min_new_tokens=5, do_sample=False,
                          pad_token_id=PAD)


def decisions(arch):
    """Uneven keep-lists: layer 0 loses every unit (its attention must still count cache steps)."""
    n = UNITS[arch]
    heads = {("decoder", 0, "self"): [], ("decoder", 1, "self"): [n - 1], ("decoder", 2, "self"): list(range(n))}
    units = {("decoder", 0, "ffn"): [0, 5, 7], ("decoder", 1, "ffn"): [], ("decoder", 2, "ffn"): list(range(20))}
    return heads, units


@pytest.mark.parametrize("arch", ARCHS)
def test_masked_equals_sliced_logits_and_generation(arch):
    model = tiny(arch)
    ids, mask = inputs()
    heads, units = decisions(arch)
    assert [s.num_heads for s in get_adapter(model).attention_sites(model)] == [UNITS[arch]] * 3
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=mask).logits
        with Gates(model, layers=True) as gates:
            for key, keep in heads.items():
                gates.set_head_mask(key, keep)
            for key, keep in units.items():
                gates.set_ffn_mask(key, keep)
            gates.set_layer_mask("decoder", [0, 2])
            ref = model(input_ids=ids, attention_mask=mask).logits
            ref_gen = generate(model, ids, mask)
    sliced = copy.deepcopy(model)
    surgery.prune_ffn(surgery.prune_heads(sliced, heads), units)
    surgery.drop_layers(sliced, "decoder", [0, 2])
    with torch.no_grad():
        out = sliced(input_ids=ids, attention_mask=mask).logits
        gen = generate(sliced, ids, mask)
    assert (ref - full).abs().max() > 1e-3  # the masks really change the model
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    assert torch.equal(gen, ref_gen) and gen.shape == (2, 12)
    assert surgery.model_shape(sliced) == {
        "layers": {"decoder": 2}, "heads": [["decoder", 0, "self", 0], ["decoder", 1, "self", UNITS[arch]]],
        "ffn": [["decoder", 0, 3], ["decoder", 1, 20]]}
    assert sliced.config.num_hidden_layers == 2


def test_gqa_unit_is_a_key_value_group():
    model = tiny("llama")
    site = get_adapter(model).attention_sites(model)[1]
    assert (site.num_heads, site.head_dim, site.kv_dim) == (2, 16, 8)  # 2 groups of 2 query heads of size 8
    before = model.num_parameters()
    surgery.prune_heads(model, {site.key: [1]})
    attn = model.model.layers[1].self_attn
    # group 1 = query heads 2, 3 (q rows 16:32, o columns 16:32) and k/v head 1 (rows 8:16)
    assert before - model.num_parameters() == 16 * 32 + 8 * 32 + 8 * 32 + 32 * 16
    assert (attn.q_proj.out_features, attn.k_proj.out_features, attn.o_proj.in_features) == (16, 8, 16)
    assert attn.num_key_value_groups == 2
    reference = tiny("llama").model.layers[1].self_attn
    assert torch.equal(attn.q_proj.weight, reference.q_proj.weight[16:32])
    assert torch.equal(attn.k_proj.weight, reference.k_proj.weight[8:16])
    assert torch.equal(attn.o_proj.weight, reference.o_proj.weight[:, 16:32])


def test_gpt2_fused_qkv_and_conv1d_ffn_slicing():
    model = tiny("gpt2")
    ref_attn, ref_mlp = copy.deepcopy(model.transformer.h[0].attn), copy.deepcopy(model.transformer.h[0].mlp)
    surgery.prune_heads(model, {("decoder", 0, "self"): [1, 3]})
    surgery.prune_ffn(model, {("decoder", 0, "ffn"): [2, 40]})
    attn, mlp = model.transformer.h[0].attn, model.transformer.h[0].mlp
    columns = [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]  # heads 1, 3 of size 8
    fused = columns + [c + 32 for c in columns] + [c + 64 for c in columns]  # ... in the q, k and v thirds
    assert torch.equal(attn.c_attn.weight, ref_attn.c_attn.weight[:, fused])
    assert torch.equal(attn.c_attn.bias, ref_attn.c_attn.bias[fused])
    assert torch.equal(attn.c_proj.weight, ref_attn.c_proj.weight[columns])
    assert (attn.num_heads, attn.split_size) == (2, 16)
    assert torch.equal(mlp.c_fc.weight, ref_mlp.c_fc.weight[:, [2, 40]])
    assert torch.equal(mlp.c_proj.weight, ref_mlp.c_proj.weight[[2, 40]])
    assert torch.equal(mlp.c_proj.bias, ref_mlp.c_proj.bias)


def test_layer_drop_renumbers_and_slices_layer_types():
    model = tiny("qwen2")
    assert model.config.layer_types == ["full_attention", "sliding_attention", "sliding_attention"]
    surgery.drop_layers(model, "decoder", [1, 2])
    assert model.config.layer_types == ["sliding_attention", "sliding_attention"]
    assert model.config.num_hidden_layers == 2
    assert [layer.self_attn.layer_idx for layer in model.model.layers] == [0, 1]
    ids, mask = inputs()
    with torch.no_grad():
        assert generate(model, ids, mask).shape == (2, 12)


def test_gpt2_inverse_layer_scaling_refuses_inner_layer_drop():
    from forgetless.errors import UnsupportedModelError

    config = tiny_config("gpt2")
    config.scale_attn_by_inverse_layer_idx = True
    model = transformers.GPT2LMHeadModel(config)
    with pytest.raises(UnsupportedModelError, match="scale_attn_by_inverse_layer_idx"):
        surgery.drop_layers(model, "decoder", [1, 2])
    surgery.drop_layers(model, "decoder", [0, 1])  # dropping the last layer keeps every scale
    assert model.config.n_layer == 2


def test_save_load_in_fresh_process(tmp_path):
    ids, mask = inputs()
    expected = {}
    for arch in ARCHS:
        model = tiny(arch)
        heads, units = decisions(arch)
        surgery.prune_ffn(surgery.prune_heads(model, heads), units)
        surgery.drop_layers(model, "decoder", [0, 2])
        with torch.no_grad():
            expected[arch] = {"logits": model(input_ids=ids, attention_mask=mask).logits.tolist(),
                              "tokens": generate(model, ids, mask).tolist()}
        io.save_model(model, tmp_path / arch)
    script = (
        "import json, torch\n"
        "from forgetless.models import io\n"
        f"ids = torch.tensor({ids.tolist()}); mask = torch.tensor({mask.tolist()})\n"
        "out = {}\n"
        f"for arch in {ARCHS!r}:\n"
        f"    model, _ = io.load_model({str(tmp_path)!r} + '/' + arch)\n"
        "    with torch.no_grad():\n"
        "        out[arch] = {'logits': model(input_ids=ids, attention_mask=mask).logits.tolist(), 'tokens': "
        f"model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=5, min_new_tokens=5, do_sample=False, "
        f"pad_token_id={PAD}).tolist()}}\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180,
                            env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    for arch in ARCHS:
        assert got[arch]["tokens"] == expected[arch]["tokens"], arch
        torch.testing.assert_close(torch.tensor(got[arch]["logits"]), torch.tensor(expected[arch]["logits"]),
                                   atol=1e-6, rtol=0)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2"])
def test_layer_removal_only_loads_with_stock_from_pretrained(arch, tmp_path):
    model = tiny(arch)
    surgery.drop_layers(model, "decoder", [0, 2])
    io.save_model(model, tmp_path / "m")
    stock = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "m", use_safetensors=True).eval()
    ids, mask = inputs()
    with torch.no_grad():
        torch.testing.assert_close(stock(input_ids=ids, attention_mask=mask).logits,
                                   model(input_ids=ids, attention_mask=mask).logits, atol=0, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_sequence_classification_masked_equals_sliced(arch):
    model = tiny(arch, head="cls")
    ids = torch.randint(1, VOCAB, (3, 9), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    ids[1, 6:], mask[1, 6:] = PAD, 0  # right padding: the pooled token is the last non-pad one
    heads, units = decisions(arch)
    with torch.no_grad(), Gates(model) as gates:
        for key, keep in heads.items():
            gates.set_head_mask(key, keep)
        for key, keep in units.items():
            gates.set_ffn_mask(key, keep)
        ref = model(input_ids=ids, attention_mask=mask).logits
    surgery.prune_ffn(surgery.prune_heads(model, heads), units)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask).logits
    assert out.shape == (3, 3)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch, per_layer", [("llama", 7), ("gpt2", 4)])
def test_magnitude_prunes_every_projection(arch, per_layer):
    model = tiny(arch, head="cls")
    linears = get_adapter(model).prunable_linears(model)
    assert len(linears) == 3 * per_layer  # q, k, v, o, gate, up, down / c_attn, c_proj, c_fc, c_proj
    assert not any("embed" in name or "score" in name or "wte" in name for name, _ in linears)
    pruner = MagnitudePruner(model)
    pruner.prune_to(0.5)
    assert abs(pruner.sparsity() - 0.5) < 1e-3


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_rahp_fisher_per_unit_equals_squared_gradients(arch):
    """RAHP eq. 3 per prunable unit (a KV group under GQA; GPT-2: a head's three blocks of the fused
    c_attn), against per-example autograd gradients sliced with ``head_parameters``."""
    from forgetless.methods.rahp.model_scoring import fisher_scores
    from forgetless.methods.rahp.scores import head_sq_norms

    model = tiny(arch, head="cls")
    # right padding: scoring feeds inputs_embeds, and the adapter pools each row's last real token
    ids = torch.randint(1, VOCAB, (3, 6), generator=torch.Generator().manual_seed(5))
    mask = torch.ones_like(ids)
    ids[1, 4:], mask[1, 4:] = PAD, 0
    labels = torch.tensor([0, 2, 1])
    fisher = fisher_scores(model, [{"input_ids": ids, "attention_mask": mask, "labels": labels}])
    sites = get_adapter(model).attention_sites(model)
    n = UNITS[arch]
    ref = torch.zeros(3 * n)
    for i in range(3):
        length = int(mask[i].sum())
        model.zero_grad()
        logits = model(input_ids=ids[i:i + 1, :length]).logits
        torch.nn.functional.cross_entropy(logits, labels[i:i + 1]).backward()
        for s, site in enumerate(sites):
            for param, dim, role in site.head_parameters():
                sq = head_sq_norms(param.grad, dim, site.unit_width(role))
                ref[s * n:(s + 1) * n] += (sq.reshape(3, n).sum(dim=0) if role == "qkv" else sq) / 3
    assert fisher.shape == (3 * n,)
    torch.testing.assert_close(fisher, ref, rtol=1e-4, atol=1e-12)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_rahp_margin_of_a_padded_row_is_its_unpadded_margin(arch):
    """RAHP eq. 1's margin g and ‖∇ₓg‖ come from input embeddings; a right-padded row must be scored
    at its last real token, as the row alone would be (not at a pad position)."""
    from forgetless.methods.rahp.model_scoring import margin_and_grad_norm
    from forgetless.methods.rahp.scores import margin

    model = tiny(arch, head="cls")
    ids = torch.randint(1, VOCAB, (3, 7), generator=torch.Generator().manual_seed(6))
    mask = torch.ones_like(ids)
    ids[0, 3:], mask[0, 3:] = PAD, 0
    ids[2, 5:], mask[2, 5:] = PAD, 0
    labels = torch.tensor([1, 0, 2])
    g, _ = margin_and_grad_norm(model, {"input_ids": ids, "attention_mask": mask, "labels": labels})
    with torch.no_grad():
        alone = torch.cat([model(input_ids=ids[i:i + 1, :int(mask[i].sum())]).logits for i in range(3)])
    torch.testing.assert_close(g, margin(alone.float(), labels), atol=1e-5, rtol=0)


def test_michel_importance_of_a_kv_group_sums_its_query_heads_gradients():
    """Michel et al. (2019) on GQA: the unit gate multiplies its G query heads, so ∂L/∂ξ_group is
    the sum of the query heads' gate gradients; importance = E_x |Σ_{h ∈ group} ∂L/∂ξ_h|."""
    from forgetless.methods.rahp.model_scoring import michel_importance

    model = tiny("llama", head="cls")
    ids = torch.randint(1, VOCAB, (3, 6), generator=torch.Generator().manual_seed(6))
    labels = torch.tensor([1, 0, 2])
    importance = michel_importance(model, [{"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}])
    ref = torch.zeros(6)
    head_gates = [torch.ones(4, requires_grad=True) for _ in range(3)]  # per query head, size 8
    handles = [layer.self_attn.o_proj.register_forward_pre_hook(
        lambda m, args, g=g: (args[0] * g.repeat_interleave(8),)) for layer, g in zip(model.model.layers, head_gates)]
    for i in range(3):
        loss = torch.nn.functional.cross_entropy(model(input_ids=ids[i:i + 1]).logits, labels[i:i + 1])
        grads = torch.autograd.grad(loss, head_gates)
        ref += torch.cat([g.reshape(2, 2).sum(dim=1).abs() for g in grads]) / 3  # groups: heads {0,1}, {2,3}
    for handle in handles:
        handle.remove()
    torch.testing.assert_close(importance, ref, rtol=1e-4, atol=1e-8)
