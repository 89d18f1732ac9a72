"""The any-decoder matrix: every decoder-only model type of transformers' own causal-LM registry
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` through ``blocks.is_decoder_only``), built tiny from its config
(``any_decoder.py``), with no per-family code in forgetless:

* Wanda 2:4 through ``forgetless.apply``: exactly 2 of every 4 weights kept in every targeted linear
  (every expert's projections included), fewer only where the random base already had zeros;
* GPTQ 4-bit through ``forgetless.apply`` and ``save_model``: plain ``from_pretrained``
  (compressed-tensors installed) gives the in-memory logits exactly;
* layer removal (``surgery.drop_layers``, what block-influence and truncate call): greedy generation
  of the cut model equals the full model with the removed block bypassed.

``SKIPPED``: types whose tiny config does not build or run on CPU here, with the reason. ``REFUSED``:
types forgetless refuses, with the one clear error each check asserts. The LLM suite, fresh-process
reloads and mixed layer types are in ``test_any_decoder_moe.py`` / ``test_any_decoder_suite.py``.
"""
import copy
import math
import shutil

import pytest
import torch
import transformers

import forgetless
from forgetless.errors import ForgetlessError, UnsupportedModelError
from forgetless.methods._shared.oneshot import chosen_linears
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.experts import linearized
from forgetless.models.gates import Gates
from forgetless.models.sites import weight_matrix
from forgetless.models.stock import stock_loadable

from any_decoder import TEXTS, char_tokenizer, decoder_types, left_padded, tiny_model

torch.set_num_threads(1)
BUILD = "its tiny config does not build or run on CPU"
SKIPPED = {
    # multimodal / composite configs transformers registers as causal LMs but whose top config has no text sizes
    "dots3_note": f"{BUILD}: composite config without pad_token_id", "emu3": f"{BUILD}: composite config",
    "llama4": f"{BUILD}: composite config (llama4_text is in the matrix)", "qwen3_5": f"{BUILD}: composite config",
    "qwen3_5_moe": f"{BUILD}: composite config", "qwen4_exp": f"{BUILD}: composite config",
}
REFUSED = {  # family: (check, the error's words); every other check of the family passes
    "hrm_text": ("all", "several lists of blocks"),  # recurrent L / H modules: no one stack of blocks
    "jetmoe": ("all", "keeps its experts in fused 3-D weights"),  # not a transformers experts module
    "llama4_text": ("all", "keeps its experts in fused 3-D weights"),
    "diffllama": ("removal", "cannot describe kept block"),  # lambda_init depends on the block's depth
    "beam": ("removal", "cannot describe kept block"),
}
# stock from_pretrained of their compressed-tensors folder raises (replayed by stock.compressed_init_failure):
# transformers' _init_weights reads a Linear's weight, which compressed-tensors replaced; load_model reloads
STOCK_RAISES = ("afmoe", "falcon_mamba", "gpt_bigcode", "mamba", "modernbert-decoder", "nanochat", "recurrent_gemma",
                "rwkv")
MATRIX = [t for t in decoder_types() if t not in SKIPPED]


def test_the_matrix_is_transformers_registry():
    """Every decoder-only type is tested or skipped with a reason; no stale entries."""
    assert set(SKIPPED) | set(REFUSED) <= set(decoder_types())
    assert len(MATRIX) + len(SKIPPED) == len(decoder_types()) > 100


def _model(family: str):
    try:
        return tiny_model(family)
    except Exception as exc:  # noqa: BLE001 - a new transformers family must land in SKIPPED, with its reason
        pytest.fail(f"{family}: {BUILD} ({type(exc).__name__}: {exc}); add it to SKIPPED")


def _refused(family: str, check: str):
    kind, words = REFUSED.get(family, (None, None))
    return pytest.raises(ForgetlessError, match=words) if kind in ("all", check) else None


@pytest.mark.parametrize("family", MATRIX)
def test_wanda_gptq_and_layer_removal(family, tmp_path):
    model = _model(family)
    refusal = _refused(family, "all")
    if refusal is not None:
        with refusal:
            forgetless.apply(model, WandaConfig(pattern="2:4", calibration_examples=4), calibration=TEXTS,
                             tokenizer=char_tokenizer())
        return
    _check_wanda(model)
    _check_gptq(family, model, tmp_path)
    _check_removal(family, model)


def _check_wanda(model) -> None:
    base = copy.deepcopy(model)
    pruned = forgetless.apply(copy.deepcopy(model), WandaConfig(pattern="2:4", calibration_examples=4),
                              calibration=TEXTS, tokenizer=char_tokenizer())
    names = [name for name, _ in chosen_linears(pruned, WandaConfig())[0]]
    with linearized(pruned), linearized(base):
        for name in names:
            kept = weight_matrix(pruned.get_submodule(name)).reshape(-1, 4) != 0  # out × in (GPT-2's Conv1D too)
            before = weight_matrix(base.get_submodule(name)).reshape(-1, 4) != 0
            assert torch.equal(kept.sum(1), before.sum(1).clamp(max=2)) and not (kept & ~before).any(), name


def _check_gptq(family: str, model, tmp_path) -> None:
    widths = [width for _, width in chosen_linears(model, GptqConfig())[0]]
    group = math.gcd(16, *widths)
    quantized = forgetless.apply(copy.deepcopy(model), GptqConfig(bits=4, group_size=group, calibration_examples=4),
                                 calibration=TEXTS, tokenizer=char_tokenizer())
    folder = forgetless.save_model(quantized, tmp_path / family, tokenizer=char_tokenizer())
    ids, mask = left_padded()
    with torch.no_grad():
        expected = quantized(input_ids=ids, attention_mask=mask).logits
    loadable, why = stock_loadable(folder)
    if family in STOCK_RAISES:
        assert not loadable and "raises before reading the weights" in why
        reloaded, _ = forgetless.load_model(folder)
    else:
        assert loadable, why
        reloaded = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=ids, attention_mask=mask).logits, expected)
    shutil.rmtree(folder)


def _check_removal(family: str, model) -> None:
    ids, mask = left_padded()
    refusal = _refused(family, "removal")
    if refusal is not None:
        with refusal:
            surgery.drop_layers(copy.deepcopy(model), "decoder", [0, 2])
        return
    settings = dict(max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
    with torch.no_grad(), Gates(model, heads=False, ffn=False, layers=True) as gates:
        gates.set_layer_mask("decoder", [0, 2])
        expected = model.generate(input_ids=ids, attention_mask=mask, **settings)
    cut = surgery.drop_layers(copy.deepcopy(model), "decoder", [0, 2])
    with torch.no_grad():
        assert torch.equal(cut.generate(input_ids=ids, attention_mask=mask, **settings), expected)
    for index, block in enumerate(get_adapter(cut).stacks(cut)["decoder"]):
        assert {m.layer_idx for m in block.modules() if isinstance(getattr(m, "layer_idx", None), int)} <= {index}


def test_an_encoder_is_not_a_decoder():
    with pytest.raises(UnsupportedModelError, match="'albert'"):
        forgetless.apply(transformers.AlbertForMaskedLM(transformers.AlbertConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            embedding_size=16)), WandaConfig(), calibration=TEXTS, tokenizer=char_tokenizer())
