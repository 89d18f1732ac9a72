"""Encoder-decoder adapters (T5, BART, bert2bert): per-unit parameter counts, masked == sliced
(forward and greedy generation) with uneven heads / FFN widths and dropped decoder layers, T5's
per-layer relative bias, L0 finalize, save → load in a new process."""
import copy
import json
import random
import subprocess
import sys

import pytest
import torch
import transformers

from forgetless.models import io, surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates
from forgetless.models.seq2seq import build_bert2bert
from forgetless.methods.nash.l0_masks import L0Masks, head_param_count, unit_param_count


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(kind: str, gated: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    if kind == "t5":
        config = transformers.T5Config(vocab_size=50, d_model=16, d_kv=4, d_ff=24, num_layers=3, num_decoder_layers=3,
                                       num_heads=4, relative_attention_num_buckets=8, dropout_rate=0.0,
                                       feed_forward_proj="gated-gelu" if gated else "relu",
                                       decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        model = transformers.T5ForConditionalGeneration(config)
    elif kind == "bart":
        config = transformers.BartConfig(vocab_size=50, d_model=16, encoder_layers=3, decoder_layers=3,
                                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=24,
                                         decoder_ffn_dim=24, max_position_embeddings=64, dropout=0.0,
                                         attention_dropout=0.0, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                         decoder_start_token_id=2, forced_eos_token_id=None)
        model = transformers.BartForConditionalGeneration(config)
    else:
        bert = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=4,
                                       intermediate_size=24, max_position_embeddings=64, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0)
        model = build_bert2bert(bert)
    model.generation_config.max_length = None
    return model.eval()


def _inputs():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(3, 50, (2, 7), generator=g)
    mask = torch.ones_like(x)
    mask[1, 5:] = 0
    return x, mask, torch.randint(3, 50, (2, 5), generator=g)


def _generate(model, x, mask, beams=1):
    return model.generate(input_ids=x, attention_mask=mask, max_new_tokens=6, min_new_tokens=6, num_beams=beams,
                          do_sample=False)


def test_parameter_counts_per_head_and_unit_read_from_modules():
    # T5: q, k, v rows (4 x 16 each) + o columns (16 x 4) = 256; layer 0 self-attention also owns
    # its relative-bias column (8 buckets); FFN unit: wi row 16 + wo column 16 (gated: + wi_1 row).
    for kind, gated, head, head0, unit in (("t5", False, 256, 264, 32), ("t5", True, 256, 264, 48),
                                            ("bart", False, 268, 268, 33), ("b2b", False, 268, 268, 33)):
        model = tiny(kind, gated)
        adapter = get_adapter(model)
        sites = adapter.attention_sites(model)
        assert {(s.stack, s.kind) for s in sites} == {("encoder", "self"), ("decoder", "self"), ("decoder", "cross")}
        for site in sites:
            expected = head0 if (site.layer == 0 and site.kind == "self") else head
            assert head_param_count(site) == expected, (kind, site.key)
        assert all(unit_param_count(s) == unit for s in adapter.ffn_sites(model))
        # removing one head / unit removes exactly that many parameters
        before = model.num_parameters()
        site = next(s for s in sites if s.kind == "cross")
        surgery.prune_heads(model, {site.key: [0, 1, 2]})
        surgery.prune_ffn(model, {("encoder", 1, "ffn"): list(range(23))})
        # T5: the first pruning in a stack gives its other layers their own copy of the bias table
        copies = 2 * 8 * 4 if kind == "t5" else 0
        assert before - model.num_parameters() == head + unit - copies, kind


@pytest.mark.parametrize("kind", ["t5", "bart", "b2b"])
def test_masked_equals_sliced_forward_and_generation(kind):
    model = tiny(kind)
    adapter = get_adapter(model)
    x, mask, dec = _inputs()
    rng = random.Random(3)
    heads = {s.key: sorted(rng.sample(range(4), rng.choice([0, 1, 2, 3]))) for s in adapter.attention_sites(model)}
    heads[("encoder", 0, "self")] = [1, 3]  # T5: layer 0 owns the shared bias and keeps other heads
    units = {s.key: sorted(rng.sample(range(24), rng.choice([0, 7, 24]))) for s in adapter.ffn_sites(model)}
    with torch.no_grad(), Gates(model, layers=True) as gates:
        for key, keep in heads.items():
            gates.set_head_mask(key, keep)
        for key, keep in units.items():
            gates.set_ffn_mask(key, keep)
        gates.set_layer_mask("decoder", [1, 2])  # drops decoder layer 0 (T5: the bias owner)
        ref = model(input_ids=x, attention_mask=mask, decoder_input_ids=dec).logits
        ref_gen, ref_beam = _generate(model, x, mask), _generate(model, x, mask, beams=2)
    sliced = copy.deepcopy(model)
    surgery.prune_heads(sliced, heads)
    surgery.prune_ffn(sliced, units)
    surgery.drop_layers(sliced, "decoder", [1, 2])
    with torch.no_grad():
        out = sliced(input_ids=x, attention_mask=mask, decoder_input_ids=dec).logits
        assert torch.allclose(out, ref, atol=1e-5), float((out - ref).abs().max())
        assert torch.equal(_generate(sliced, x, mask), ref_gen)
        assert torch.equal(_generate(sliced, x, mask, beams=2), ref_beam)
    assert surgery.model_shape(sliced)["layers"] == {"encoder": 3, "decoder": 2}


def test_t5_bias_is_per_layer_after_uneven_pruning():
    model = tiny("t5")
    surgery.prune_heads(model, {("encoder", 1, "self"): [0, 2]})
    blocks = model.encoder.block
    widths = [b.layer[0].SelfAttention.relative_attention_bias.embedding_dim for b in blocks]
    assert widths == [4, 2, 4]
    assert torch.equal(blocks[1].layer[0].SelfAttention.relative_attention_bias.weight,
                       blocks[0].layer[0].SelfAttention.relative_attention_bias.weight[:, [0, 2]])
    assert not hasattr(model.decoder.block[1].layer[0].SelfAttention, "forgetless_own_bias")


def test_t5_decoder_deeper_than_encoder_generates():
    model = tiny("t5")
    x, mask, _ = _inputs()
    surgery.drop_layers(model, "encoder", [2])
    assert model.config.num_layers == 1 and model.config.num_decoder_layers == 3
    assert _generate(model, x, mask).shape == (2, 7)


@pytest.mark.parametrize("kind, layer_masks", [("t5", False), ("bart", True), ("b2b", True)])
def test_l0_finalize_equals_deterministic_masks(kind, layer_masks):
    model = tiny(kind)
    x, mask, dec = _inputs()
    masks = L0Masks(model, ("encoder", "decoder"), layer_masks=layer_masks).install(model)
    with torch.no_grad():
        for p in masks.log_alpha.values():
            p.normal_(0.0, 3.0, generator=torch.Generator().manual_seed(p.numel()))
    values = masks.deterministic(0.4)
    assert masks.sparsity_of(values) >= 0.4 - 1e-6
    masks.values_for = lambda training: values  # the hooks apply exactly these gate values
    with torch.no_grad():
        ref = model(input_ids=x, attention_mask=mask, decoder_input_ids=dec).logits
        ref_gen = _generate(model, x, mask)
    before = model.num_parameters()
    masks.finalize(model, values)
    with torch.no_grad():
        assert torch.allclose(model(input_ids=x, attention_mask=mask, decoder_input_ids=dec).logits, ref, atol=1e-5)
        assert torch.equal(_generate(model, x, mask), ref_gen)
    assert model.num_parameters() < before


@pytest.mark.parametrize("kind", ["t5", "b2b"])
def test_save_load_in_new_process(kind, tmp_path):
    model = tiny(kind)
    surgery.prune_heads(model, {("encoder", 0, "self"): [2], ("decoder", 1, "cross"): [0, 1, 3],
                                ("decoder", 2, "self"): []})
    surgery.prune_ffn(model, {("encoder", 2, "ffn"): [1, 5, 9]})
    surgery.drop_layers(model, "decoder", [1, 2])
    x, mask, _ = _inputs()
    with torch.no_grad():
        expected = _generate(model, x, mask).tolist()
    io.save_model(model, tmp_path / "m")
    script = (
        "import json, sys, torch\n"
        "from forgetless.models import io\n"
        f"model, _ = io.load_model({str(tmp_path / 'm')!r})\n"
        f"x = torch.tensor({x.tolist()}); m = torch.tensor({mask.tolist()})\n"
        "out = model.generate(input_ids=x, attention_mask=m, max_new_tokens=6, min_new_tokens=6, do_sample=False)\n"
        "print(json.dumps(out.tolist()))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected
