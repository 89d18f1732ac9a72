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
from packaging.version import Version

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
from forgetless.models.transformers_compat import TESTED_TRANSFORMERS

from any_decoder import TEXTS, char_tokenizer, decoder_types, left_padded, tiny_model

torch.set_num_threads(1)
BUILD = "its tiny config does not build or run on CPU"
LARGE = "the tiny sizes do not reach every part of its config (over 3M parameters)"
SKIPPED = {
    # composite / multimodal configs transformers registers as causal LMs (their text types are in the matrix)
    **{t: f"{BUILD}: a composite config without text sizes" for t in (
        "dots3_note", "emu3", "llama4", "musicgen", "musicgen_melody", "qwen3_5", "qwen3_5_moe", "qwen4_exp")},
    **{t: f"{LARGE}: vision / audio towers or byte patches" for t in (
        "blt", "fuyu", "git", "gemma4_text", "gemma4_unified_assistant", "mllama", "phi4_multimodal")},
    **{t: LARGE for t in ("cpmant", "inkling2_loop_text", "inkling2_text", "inkling_text", "kimi_linear",
                          "longcat_flash")},
    "axk1": f"{BUILD}: its attention reshapes to a head size of 0 at these sizes",
    "bailing_hybrid": f"{BUILD}: its linear attention reshapes to a head size of 0 at these sizes",
    "cohere_compass_text": f"{BUILD}: KeyError 'full_attention' in its rotary settings",
    "dbrx": f"{BUILD}: its nested attention config has no rope_theta",
    "dory": f"{BUILD}: its attention masks and scores disagree in length at these sizes",
    "dots3_note_text": f"{BUILD}: it wants as many key/value heads as query heads",
    "gemma3n_text": f"{BUILD}: its per-layer KV-cache sharing wants more layers",
    "gemma4_assistant": f"{BUILD}: hidden_size_per_layer_input must be 0",
    "gemma4_unified_text": f"{BUILD}: head_dim is a per-layer attribute its config refuses to read globally",
    "gpt_neo": f"{BUILD}: attention_layers must list one type per layer",
    "lfm2_moe": f"{BUILD}: TypeError in its config",
    "mamba2": f"{BUILD}: hidden_size × expand must equal num_heads × head_dim",
    "qwen4_exp_text": f"{BUILD}: TypeError in its config (head sizes None)",
    "zamba": f"{BUILD}: its tied shared-transformer keys do not resolve at 3 layers",
    "zamba2": f"{BUILD}: layer_types has 54 entries whatever the depth",
    "zaya": f"{BUILD}: it supports num_experts_per_tok=1 only",
    "deepseek_v4": "over a minute of CPU for its tiny model (indexed attention over 3 blocks): too slow for the suite",
    "minimax_m3_vl_text": "over a minute of CPU for its tiny model: too slow for the suite",
}
REFUSED = {  # family: (check, the error's words); every other check of the family passes
    "hrm_text": ("all", "several lists of blocks"),  # recurrent L / H modules: no one stack of blocks
    "jetmoe": ("all", "keeps its experts in fused 3-D weights"),  # not a transformers experts module
    "llama4_text": ("all", "keeps its experts in fused 3-D weights"),
    "diffllama": ("removal", "cannot describe kept block"),  # lambda_init depends on the block's depth
    "beam": ("removal", "cannot describe kept block"),
    "jamba": ("removal", "cannot describe kept block"),  # attention / expert blocks alternate by depth
    "minicpm3": ("removal", "cannot describe kept block"),  # residual_scale depends on the depth
    # transformers 5.17's Aria kept its experts in its own grouped GEMM (a transformers experts module from 5.18)
    **({"aria_text": ("all", "keeps its experts in fused 3-D weights")}
       if Version(transformers.__version__) < Version("5.18") else {}),
}
# plain from_pretrained of their GPTQ folder raises, as the stock-loading check says; forgetless.load_model reloads
STOCK_RAISES = {**{t: "raises before reading the weights" for t in (  # _init_weights reads a quantized Linear's weight
    "afmoe", "falcon_mamba", "gpt_bigcode", "mamba", "modernbert-decoder", "nanochat", "recurrent_gemma", "rwkv")},
    "xlstm": "raises before reading the weights",
    # transformers writes time_step_limit [0, inf] to config.json, then refuses to read it
    **{t: "from config.json fails" for t in ("bamba", "falcon_h1", "granitemoehybrid", "nemotron_h")}}
# the unmodified tiny model cannot generate on CPU here: removal compared on full-sequence logits
NO_GENERATE = {"openai-gpt": "generate fails inside transformers on the unmodified model (no cache support)",
               "xlstm": "its recurrent cache has the wrong shape for a batch of 2 (transformers' own error)",
               **{t: "generate asks a cache of linear-attention layers for its length (transformers' own error)"
                  for t in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")},
               **{t: "blocks 0 and 2 kept are both state-space: generate asks their cache for a length it lacks"
                  for t in ("bamba", "granitemoehybrid")}}
MATRIX = [t for t in decoder_types() if t not in SKIPPED]


def test_the_matrix_is_transformers_registry():
    """Every decoder-only type is tested or skipped with a reason; no stale entries (on the newest tested
    transformers: an older one lacks the families added since)."""
    if Version(transformers.__version__).release[:2] >= Version(TESTED_TRANSFORMERS[1]).release:
        assert set(SKIPPED) | set(REFUSED) | set(STOCK_RAISES) | set(NO_GENERATE) <= set(decoder_types())
    assert len(MATRIX) + len(set(SKIPPED) & set(decoder_types())) == len(decoder_types()) > 100


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
        expected = quantized(input_ids=ids, attention_mask=mask, use_cache=False).logits
    loadable, why = stock_loadable(folder)
    if family in STOCK_RAISES:
        assert not loadable and STOCK_RAISES[family] in why
        reloaded, _ = forgetless.load_model(folder)
    else:
        assert loadable, why
        reloaded = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=ids, attention_mask=mask, use_cache=False).logits, expected)
    shutil.rmtree(folder)


def _check_removal(family: str, model) -> None:
    ids, mask = left_padded()
    refusal = _refused(family, "removal")
    if refusal is not None:
        with refusal:
            surgery.drop_layers(copy.deepcopy(model), "decoder", [0, 2])
        return
    settings = dict(max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)

    def run(m):
        if family in NO_GENERATE:
            return m(input_ids=ids, attention_mask=mask, use_cache=False).logits
        return m.generate(input_ids=ids, attention_mask=mask, **settings)

    with torch.no_grad(), Gates(model, heads=False, ffn=False, layers=True) as gates:
        gates.set_layer_mask("decoder", [0, 2])
        expected = run(model)
    cut = surgery.drop_layers(copy.deepcopy(model), "decoder", [0, 2])
    with torch.no_grad():
        assert torch.equal(run(cut), expected)
    for index, block in enumerate(get_adapter(cut).stacks(cut)["decoder"]):
        assert {m.layer_idx for m in block.modules() if isinstance(getattr(m, "layer_idx", None), int)} <= {index}


def test_an_encoder_is_not_a_decoder():
    with pytest.raises(UnsupportedModelError, match="'albert'"):
        forgetless.apply(transformers.AlbertForMaskedLM(transformers.AlbertConfig(
            vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            embedding_size=16)), WandaConfig(), calibration=TEXTS, tokenizer=char_tokenizer())
