"""The hostile inputs of the LLM surfaces (issue 43), as files: tiny Llama folders whose
``config.json`` lies about their weights (layers, widths, dtype), NaN / infinite weights, fp16
folders, a forgetless folder an earlier ``apply`` wrote, lm-eval task YAMLs forgetless cannot score
(output types, metrics, items without choices, a gold answer that is no choice, a task name defined
twice, a missing or cyclic ``include:``), calibration texts and a user's folder. Built once per
session (``build_llm_files``); ``tests/e2e/test_bad_inputs_llm.py`` runs the cases on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file

TEXTS = [f"calibration text number {i} about {w}, with a few more words to read" for i, w in
         enumerate(["cats", "rivers", "bread", "trains", "music", "paper", "rain", "maps"])]
SMALL = {"calibration_examples": 4, "calibration_length": 16, "calibration_batch": 2}
ROWS = [{"q": f"Is {i} an even number?", "a": i % 2, "choices": ["yes", "no"]} for i in range(6)]


def build_llm_files(root: Path, tokenizer) -> dict:
    """Every file of the cases under ``root``; ``{name: path}`` (``root``: the whole fixture)."""
    root.mkdir(parents=True, exist_ok=True)
    p = {"root": str(root)}
    llama = _llama(root / "llama", tokenizer)
    p["llama"] = str(llama)
    _llama(root / "llama16", tokenizer, torch.float16)
    p["llama16"] = str(root / "llama16")
    for name, change in (("lie2", {"num_hidden_layers": 2}), ("lie6", {"num_hidden_layers": 6}),
                         ("liehid", {"hidden_size": 48}), ("lieffn", {"intermediate_size": 96}),
                         ("liedtype", {"dtype": "float16"}), ("lieheads", {"num_key_value_heads": 4})):
        p[name] = str(_lying(llama, root / name, change))
    p["nan"] = str(_poisoned(llama, root / "nan", lambda name, t: torch.full_like(t, float("nan"))))
    p["inf"] = str(_poisoned(llama, root / "inf", lambda name, t: _one_inf(t) if "layers.2.mlp.down" in name else t))
    truncated = root / "truncated"
    shutil.copytree(llama, truncated)
    data = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    p["truncated"] = str(truncated)
    bert = root / "bert"
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                                   num_attention_heads=4, intermediate_size=64)).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    p["bert"] = str(bert)
    p.update(_forgetless_folders(root, llama, tokenizer))
    p["applied_lie"] = str(_lying(Path(p["applied"]), root / "applied-lie", {"num_hidden_layers": 2}))
    user = root / "user-folder"
    user.mkdir()
    (user / "notes.txt").write_text("the user's own file")
    p["user_folder"] = str(user)
    (root / "a-file.txt").write_text("x")
    p["a_file"] = str(root / "a-file.txt")
    (root / "texts.txt").write_text("\n".join(TEXTS) + "\n")
    p["texts"] = str(root / "texts.txt")
    (root / "data.tsv").write_text("sentence\tlabel\n" + "".join(f"text {i}\t{['neg', 'pos'][i % 2]}\n" for i in range(8)))
    p["tsv"] = str(root / "data.tsv")
    p.update(write_yamls(root / "yamls"))
    return p


def _llama(path: Path, tokenizer, dtype=torch.float32) -> Path:
    from forgetless.models.tiny import tiny_llama_config

    torch.manual_seed(0)
    config = tiny_llama_config(tokenizer.vocab_size, tokenizer.pad_token_id, tie_word_embeddings=True)
    transformers.LlamaForCausalLM(config).to(dtype).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _lying(source: Path, path: Path, change: dict) -> Path:
    """A copy of ``source`` whose config.json says ``change`` (the weights stay those of ``source``)."""
    shutil.copytree(source, path)
    config = json.loads((path / "config.json").read_text())
    config.update(change)
    (path / "config.json").write_text(json.dumps(config))
    return path


def _poisoned(source: Path, path: Path, change) -> Path:
    shutil.copytree(source, path)
    state = load_file(str(path / "model.safetensors"))
    save_file({name: change(name, t) for name, t in state.items()}, str(path / "model.safetensors"),
              metadata={"format": "pt"})
    return path


def _one_inf(tensor: torch.Tensor) -> torch.Tensor:
    tensor = tensor.clone()
    tensor.view(-1)[7] = float("inf")
    return tensor


def _forgetless_folders(root: Path, llama: Path, tokenizer) -> dict:
    """A model folder an earlier streamed ``apply`` wrote, and an fp16 forgetless folder."""
    import forgetless
    from forgetless.methods.wanda.config import WandaConfig
    from forgetless.models.io import save_model

    applied = forgetless.apply_streamed(str(llama), WandaConfig(**SMALL), calibration=TEXTS, out_dir=root / "applied")
    half = transformers.AutoModelForCausalLM.from_pretrained(root / "llama16", use_safetensors=True)
    return {"applied": str(applied), "forgetless16": str(save_model(half, root / "forgetless16", tokenizer))}


def _yaml(name: str, data: Path, output_type: str = "multiple_choice", metrics=("acc",), extra: str = "",
          choice: str = "{{choices}}", target: str = "{{a}}") -> str:
    metric_list = "".join(f"  - metric: {m}\n" for m in metrics) if metrics is not None else ""
    return (f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
            f"output_type: {output_type}\ntest_split: test\ndoc_to_text: \"{{{{q}}}}\"\n"
            f"doc_to_target: \"{target}\"\n" + (f"doc_to_choice: \"{choice}\"\n" if choice else "")
            + ("metric_list:\n" + metric_list if metrics is not None else "") + extra)


def write_yamls(folder: Path) -> dict:
    """lm-eval task YAMLs (one folder; a broken one and a shadowing one in folders of their own)."""
    folder.mkdir(parents=True)
    rows, empty, one = folder / "rows.jsonl", folder / "no-choice.jsonl", folder / "one-choice.jsonl"
    _jsonl(rows, ROWS)
    _jsonl(empty, ROWS[:3] + [{"q": "an item without choices", "a": 0, "choices": []}])
    _jsonl(one, ROWS[:2] + [{"q": "an item with one choice", "a": 0, "choices": ["yes"]}])
    _jsonl(folder / "gold-out.jsonl", ROWS[:2] + [{"q": "gold 5 of 2 choices", "a": 5, "choices": ["yes", "no"]}])
    files = {
        "ok": _yaml("t_ok", rows), "gen": _yaml("t_gen", rows, "generate_until", ("exact_match",), choice=""),
        "no-output-type": _yaml("t_noout", rows).replace("output_type: multiple_choice\n", ""),
        "ll-default": _yaml("t_lldefault", rows, "loglikelihood", None, choice=""),
        "ll-ppl": _yaml("t_llppl", rows, "loglikelihood", ("perplexity",), choice=""),
        "rolling-acc": _yaml("t_rollacc", rows, "loglikelihood_rolling", ("acc",), choice=""),
        "foo": _yaml("t_foo", rows, metrics=("foo",)), "mcc": _yaml("t_mcc", rows, metrics=("mcc",)),
        "f1": _yaml("t_f1", rows, metrics=("acc", "f1")),
        "mutual": _yaml("t_mutual", rows, metrics=("acc", "acc_mutual_info")),
        "norm-only": _yaml("t_normonly", rows, metrics=("acc_norm",)),
        "brier": _yaml("t_brier", rows, metrics=("acc", "brier_score")),
        "function-metric": _yaml("t_fnmetric", rows, metrics=("!function utils.score",)),
        "no-choice": _yaml("t_nochoice", empty), "one-choice": _yaml("t_onechoice", one),
        "text-choices": _yaml("t_textchoice", rows, choice="{{q}}"),
        "gold-out": _yaml("t_goldout", folder / "gold-out.jsonl"),
        "gold-text": _yaml("t_goldtext", rows, target="maybe"),
        "dup1": _yaml("t_dup", rows), "dup2": _yaml("t_dup", rows).replace('"{{q}}"', '"Q: {{q}}"'),
        "include-missing": "include: gone.yaml\ntask: t_incmissing\n",
        "cycle-a": "include: cycle-b.yaml\ntask: t_cycle\n", "cycle-b": "include: cycle-a.yaml\n",
        "group": "group: g_two\ntask:\n  - t_ok\n  - t_three\n",
        "three-ok": _yaml("t_three", rows, metrics=("acc", "acc_norm")),
    }
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text)
    broken = folder.parent / "broken-yamls"
    broken.mkdir()
    (broken / "bad.yaml").write_text("task: t_bad\ndataset_path: json\n  bad: [indent\n")
    shadow = folder.parent / "shadow-yamls"
    shadow.mkdir()
    (shadow / "piqa.yaml").write_text(_yaml("piqa_offline", rows))
    return {"yamls": str(folder), "broken_yamls": str(broken), "shadow_yamls": str(shadow)}


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
