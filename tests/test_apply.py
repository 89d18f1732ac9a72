"""``forgetless.apply`` (issue 33): one method or a stack on a model object, with calibration texts,
and nothing else — the model comes back compressed (2:4 zeros, a 4-bit grid) and no file is written
(watched: the current folder, the forgetless cache and the temporary folder). ``forgetless.compress``
without ``out_dir`` writes nothing either, and a one-shot run needs no temporary folder at all.
``forgetless.evaluate(model, data, base=)`` is the paired comparison of two models."""
from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import datasets
import pytest
import torch
import transformers

import forgetless
from forgetless.data.tasks import load_task
from forgetless.errors import ForgetlessError
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.heads.config import HeadsConfig
from forgetless.methods.magnitude.config import MagnitudeConfig
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.methods.truncate.config import TruncateConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.models.adapters import get_adapter
from forgetless.models.tiny import tiny_llama_config

SMALL = None  # the synthetic task, capped (evaluation of a causal LM scores every label of every example)


def small_task():
    global SMALL
    SMALL = SMALL or load_task("synthetic", train_size=16, eval_size=24)
    return SMALL


TEXTS = [f"the {w} cat sat on the {v} mat and looked at the {w} dog for a while" for w in ("red", "old", "small")
         for v in ("blue", "new", "large", "wet")]


@pytest.fixture
def llama(minilm_tokenizer):
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(tiny_llama_config(minilm_tokenizer.vocab_size)).eval()


@pytest.fixture
def watched(tmp_path, monkeypatch):
    """Empty current folder, forgetless cache and temporary folder; returns a check that they stay so (the
    cache holding at most a causal LM's zero-shot evaluations, which a rerun reuses)."""
    folders = {name: tmp_path / name for name in ("cwd", "cache", "tmp")}
    for folder in folders.values():
        folder.mkdir()
    monkeypatch.chdir(folders["cwd"])
    monkeypatch.setenv("FORGETLESS_CACHE", str(folders["cache"]))
    monkeypatch.setattr(tempfile, "tempdir", str(folders["tmp"]))

    def unchanged():
        left = {name: sorted(p.name for p in folder.iterdir() if not p.name.startswith("torchinductor"))
                for name, folder in folders.items()}
        assert left["cache"] in ([], ["llm-eval"]), left  # the shared evaluation cache (llm/cache.py), only its entries
        assert all(p.suffix == ".json" and p.name.startswith("zero-shot-")
                   for p in (folders["cache"] / "llm-eval").glob("*")), left
        assert {k: v for k, v in left.items() if k != "cache"} == {"cwd": [], "tmp": []}, left
    return unchanged


def linears(model):
    return [module.weight.detach() for _, module in get_adapter(model).prunable_linears(model)]


def two_of_four(weight: torch.Tensor) -> bool:
    """At most 2 non-zeros in every group of 4 consecutive inputs of every row."""
    return bool(((weight.reshape(weight.shape[0], -1, 4) != 0).sum(-1) <= 2).all())


def test_apply_wanda_2_4_with_calibration_strings_writes_nothing(llama, minilm_tokenizer, watched):
    before = [w.clone() for w in linears(llama)]
    pruned = forgetless.apply(llama, WandaConfig(pattern="2:4", calibration_examples=8, calibration_length=16),
                              calibration=TEXTS, tokenizer=minilm_tokenizer)
    assert pruned is llama  # changed in place, as torchao's quantize_ and llm-compressor's oneshot
    weights = linears(pruned)
    assert len(weights) == 4 * 7 and all(two_of_four(w) for w in weights)
    assert all(abs((w == 0).float().mean().item() - 0.5) < 1e-6 for w in weights)  # exactly 2 of every 4 zeroed
    assert all(torch.equal(w[w != 0], b[w != 0]) for w, b in zip(weights, before))  # Wanda updates no weight
    watched()

    # the calibration texts decide which weights go (Wanda: |W| · ‖X‖), and the same texts give the same model
    again = [forgetless.apply(copy.deepcopy(llama_copy), WandaConfig(pattern="2:4", calibration_examples=8,
                                                                     calibration_length=16),
                              calibration=texts, tokenizer=minilm_tokenizer)
             for llama_copy, texts in ((_reset(llama, before), TEXTS), (_reset(llama, before), TEXTS),
                                       (_reset(llama, before), [t.upper() + " 1 2 3" for t in TEXTS[::-1]]))]
    first, same, other = ([w != 0 for w in linears(m)] for m in again)
    assert all(torch.equal(a, b) for a, b in zip(first, same))
    assert any(not torch.equal(a, b) for a, b in zip(first, other))
    watched()


def _reset(model, weights):
    """A copy of ``model`` with its prunable weights set back to ``weights``."""
    fresh = copy.deepcopy(model)
    with torch.no_grad():
        for w, original in zip(linears(fresh), weights):
            w.copy_(original)
    return fresh


def test_apply_stack_sparsegpt_then_gptq_keeps_2_4_on_a_4_bit_grid(llama, minilm_tokenizer, watched):
    stack = [SparseGptConfig(pattern="2:4", calibration_examples=8, calibration_length=16),
             GptqConfig(bits=4, group_size=16, calibration_examples=8, calibration_length=16)]
    model = forgetless.apply(llama, stack, calibration=TEXTS, tokenizer=minilm_tokenizer)
    for weight in linears(model):
        assert two_of_four(weight)  # GPTQ keeps exact zeros at their code (methods/gptq/solver.py)
        groups = weight.reshape(weight.shape[0], -1, 16)
        distinct = max(len(torch.unique(groups[r, g])) for r in range(groups.shape[0]) for g in range(groups.shape[1]))
        assert distinct <= 16  # 4-bit codes: at most 16 values per row and group of 16 inputs
    watched()


def test_apply_reads_calibration_from_a_dataset_a_file_and_a_data_folder_set(llama, minilm_tokenizer, tmp_path,
                                                                             monkeypatch):
    config = WandaConfig(calibration_examples=8, calibration_length=16)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    data = tmp_path / "data" / "llm" / "wikitext2"
    data.mkdir(parents=True)
    (data / "wiki.test.raw").write_text("\r\n".join(TEXTS) + "\r\n")
    monkeypatch.setenv("FORGETLESS_DATA_DIR", str(tmp_path / "data"))
    sources = [TEXTS, datasets.Dataset.from_dict({"text": TEXTS, "id": list(range(len(TEXTS)))}),
               str(tmp_path / "texts.txt"), "wikitext2"]
    masks = [[w != 0 for w in linears(forgetless.apply(copy.deepcopy(llama), config, calibration=source,
                                                       tokenizer=minilm_tokenizer))] for source in sources]
    assert all(torch.equal(a, b) for other in masks[1:] for a, b in zip(masks[0], other))  # the same texts


@pytest.mark.parametrize("methods, calibration, culprit", [
    (WandaConfig(), None, "calibration: wanda calibrates on text; pass calibration="),
    (TruncateConfig(layers=2, recovery="none"), TEXTS, "calibration: no method of truncate calibrates on text"),
    (TruncateConfig(layers=2), None, "method 'truncate' trains after compressing"),
    (HeadsConfig(recovery="none"), None, "method 'heads' scores the model on a labelled task"),
    ("nash", None, "method 'nash' does not apply to a causal-lm model"),
    ([], None, "methods: an empty list"),
    (TruncateConfig(layers=9, recovery="none"), None, "layers=9: model has 4 layers"),
    (WandaConfig(), [1, 2], "calibration: a list of texts must hold strings only"),
    (WandaConfig(), datasets.Dataset.from_dict({"sentence": ["a b"]}), "has none of the text columns"),
    (WandaConfig(), "no-such-set", "calibration no-such-set: not a text file, nor a set of the data folder"),
    ("no-such-recipe", None, "no-such-recipe"),
])
def test_apply_refuses_what_it_cannot_do_before_any_work(methods, calibration, culprit, llama, minilm_tokenizer,
                                                         watched):
    before = [w.clone() for w in linears(llama)]
    with pytest.raises(ForgetlessError, match=culprit):
        forgetless.apply(llama, methods, calibration=calibration, tokenizer=minilm_tokenizer)
    assert all(torch.equal(a, b) for a, b in zip(before, linears(llama)))
    watched()


def test_apply_takes_a_recipe_and_methods_without_calibration(llama, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("method: magnitude\nsparsity: 0.5\nrecovery: none\nthen: ['truncate:layers=2,recovery=none']\n")
    model = forgetless.apply(llama, str(recipe))
    assert len(model.model.layers) == 2 and abs(zero_share(model) - 0.5) < 0.01  # global magnitude threshold
    assert abs(zero_share(forgetless.apply(model, MagnitudeConfig(sparsity=0.75, recovery="none"))) - 0.75) < 1e-3


def zero_share(model) -> float:
    return sum(int((w == 0).sum()) for w in linears(model)) / sum(w.numel() for w in linears(model))


def test_compress_without_out_dir_writes_nothing_and_needs_no_temporary_folder(llama, minilm_tokenizer, watched,
                                                                               monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a temporary folder was made for a run that trains nothing")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", refuse)
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    run = forgetless.compress(llama, small_task(), WandaConfig(pattern="2:4", calibration_examples=8,
                                                              calibration_length=16),
                              tokenizer=minilm_tokenizer, base="as-is", progress=False,
                              speed={"batch_size": 2, "seq_len": 16, "repeats": 1, "warmup": 0, "new_tokens": 2},
                              eval={"batch_size": 16})
    assert all(two_of_four(w) for w in linears(run.model)) and not any(two_of_four(w) for w in linears(llama))
    assert run.card.kind.model == "causal-lm" and run.card.params.compressed["disk_bytes"] is None
    watched()


def test_evaluate_with_base_is_the_paired_comparison(llama, minilm_tokenizer, watched):
    base = copy.deepcopy(llama)
    pruned = forgetless.apply(llama, WandaConfig(sparsity=0.7, calibration_examples=8, calibration_length=16),
                              calibration=TEXTS, tokenizer=minilm_tokenizer)
    compared = forgetless.evaluate(pruned, small_task(), base=base, tokenizer=minilm_tokenizer)
    alone = {name: forgetless.evaluate(model, small_task(), tokenizer=minilm_tokenizer)
             for name, model in (("base", base), ("compressed", pruned))}
    assert isinstance(compared, forgetless.Comparison) and isinstance(alone["base"], forgetless.Scores)
    for role in ("base", "compressed"):
        assert getattr(compared.sets["dev"], role)["accuracy"] == alone[role].sets["dev"]["accuracy"]
        assert compared.params[role]["total"] == alone[role].params["total"]
    assert compared.params["compressed"]["nonzero"] < compared.params["base"]["nonzero"]
    assert set(compared.to_dict()) >= {"sets", "challenge", "bias", "hard_easy", "intervals", "agreement", "warnings"}
    assert 0 <= compared.agreement.pooled <= 1 and compared.zero_shot is not None
    assert forgetless.Comparison.__name__ in repr(compared) and compared.to_dict()["sets"]["dev"]["base"]["n"] > 0
    same = forgetless.evaluate(base, small_task(), base=base, tokenizer=minilm_tokenizer)
    assert same.agreement.pooled == 1.0 and same.headline.kept == 1.0
    watched()
    with pytest.raises(ForgetlessError, match="model: expected"):
        forgetless.evaluate(pruned, small_task(), base=3, tokenizer=minilm_tokenizer)
    assert Path.cwd().name == "cwd"


def test_calibration_data_of_the_command_line_is_what_apply_reads(tmp_path, monkeypatch, capsys):
    """``forgetless compress --calibration-data FILE`` prunes with those texts: the saved model is the
    one ``forgetless.apply`` gives from the same model, texts and seed."""
    from forgetless.cli import main
    from forgetless.kinds import KINDS
    from forgetless.models.io import load_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    options = ["--calibration-examples", "8", "--calibration-length", "16", "--pattern", "2:4"]
    code = main(["compress", "--model", "tiny-llama", "--model-kind", "causal-lm", "--base", "as-is", "--method",
                 "wanda", *options, "--calibration-data", "texts.txt", "--train-size", "16", "--eval-size", "8",
                 "--bench-repeats", "1", "--bench-seq-len", "16", "--no-progress", "--out", "run"])
    assert code == 0, capsys.readouterr().err
    saved, _ = load_model(tmp_path / "run" / "model")
    task = load_task("synthetic", train_size=16, eval_size=8)
    model, tokenizer = KINDS["causal-lm"].load_model("tiny-llama", task, 0)
    applied = forgetless.apply(model, WandaConfig(pattern="2:4", calibration_examples=8, calibration_length=16),
                               calibration=str(tmp_path / "texts.txt"), tokenizer=tokenizer)
    assert all(torch.equal(a, b) for a, b in zip(linears(saved), linears(applied)))
    recipe = (tmp_path / "run" / "model" / "recipe.yaml").read_text()
    assert f"calibration_data: {tmp_path / 'texts.txt'}" in recipe  # the saved recipe reruns from any folder
