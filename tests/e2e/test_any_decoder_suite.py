"""Any decoder end to end on the three families of the issue's Done-means (Gemma 3 with sliding and
full attention, Phi-3 with its fused ``qkv_proj`` / ``gate_up_proj``, Mixtral with experts): Wanda 2:4
and GPTQ 4-bit through ``forgetless.apply`` reloaded by plain ``from_pretrained`` in a fresh process
to the in-memory logits; a folder in the family's checkpoint layout (``save_pretrained``) compressed
streamed to the very tensors of ``apply`` + ``save_model``; and the LLM suite on a tiny task YAML
through ``forgetless compress`` with a model folder."""
import json
import subprocess
import sys

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

import forgetless
from forgetless.cli import main
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.wanda.config import WandaConfig

from any_decoder import TEXTS, char_tokenizer, left_padded, tiny_model
from llm_data import write_llm_data

torch.set_num_threads(1)
FAMILIES = {"gemma3_text": {"layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                            "sliding_window": 3}, "phi3": {}, "mixtral": {}}
METHODS = {"wanda": WandaConfig(pattern="2:4", calibration_examples=4),
           "gptq": GptqConfig(bits=4, group_size=16, calibration_examples=4)}
RELOAD = """
import sys, torch, transformers
from safetensors.torch import load_file
torch.set_num_threads(1)  # as the run that wrote the logits: grouped_mm's sums (Mixtral's experts) follow the threads
for folder in sys.argv[1:]:
    expected = load_file(folder + "/../" + folder.rsplit("/", 1)[1] + ".logits.safetensors")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        got = model(input_ids=expected["input_ids"], attention_mask=expected["attention_mask"]).logits
    print(folder.rsplit("/", 1)[1], torch.equal(got, expected["logits"]))
"""


def test_done_means_models_reload_in_plain_transformers_in_a_fresh_process(tmp_path):
    ids, mask = left_padded()
    folders = []
    for family, changes in FAMILIES.items():
        for name, config in METHODS.items():
            model = forgetless.apply(tiny_model(family, **changes), config, calibration=TEXTS,
                                     tokenizer=char_tokenizer())
            folder = forgetless.save_model(model, tmp_path / f"{family}-{name}", tokenizer=char_tokenizer())
            with torch.no_grad():
                logits = model(input_ids=ids, attention_mask=mask).logits
            save_file({"input_ids": ids, "attention_mask": mask, "logits": logits},
                      str(tmp_path / f"{family}-{name}.logits.safetensors"))
            folders.append(str(folder))
    if any("mixtral-gptq" in f for f in folders):
        weights = load_file(str(tmp_path / "mixtral-gptq" / "model.safetensors"))
        assert "model.layers.0.block_sparse_moe.experts.3.w1.weight_packed" in weights  # packed, per expert
    done = subprocess.run([sys.executable, "-c", RELOAD, *folders], capture_output=True, text=True, check=True)
    lines = dict(line.split() for line in done.stdout.strip().splitlines())
    assert lines == {f"{family}-{name}": "True" for family in FAMILIES for name in METHODS}


@pytest.mark.parametrize("name", list(METHODS))
def test_a_checkpoint_layout_folder_streams_to_the_tensors_of_apply(name, tmp_path):
    """Mixtral saved by ``save_pretrained`` (``block_sparse_moe.experts.N.w1``: one tensor per expert)."""
    source = tmp_path / "source"
    model = tiny_model("mixtral")
    model.save_pretrained(source)
    char_tokenizer().save_pretrained(source)
    streamed = forgetless.apply_streamed(str(source), METHODS[name], calibration=TEXTS, out_dir=tmp_path / "streamed")
    loaded = transformers.AutoModelForCausalLM.from_pretrained(source).eval()
    forgetless.save_model(forgetless.apply(loaded, METHODS[name], calibration=TEXTS, tokenizer=char_tokenizer()),
                          tmp_path / "held", tokenizer=char_tokenizer())
    a, b = load_file(str(streamed / "model.safetensors")), load_file(str(tmp_path / "held" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_llm_suite_on_a_tiny_task(family, tmp_path):
    pytest.importorskip("lm_eval")
    data = write_llm_data(tmp_path / "data")
    items = tmp_path / "yes_no.jsonl"
    items.write_text("".join(json.dumps({"q": f"Is {n} even?", "a": int(n % 2 == 0)}) + "\n" for n in range(5)))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "yes_no.yaml").write_text(
        f"task: yes_no\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {items}\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: 'Question: {{q}}\\nAnswer:'\n"
        "doc_to_target: '{{a}}'\ndoc_to_choice: ['no', 'yes']\nmetric_list:\n  - metric: acc\n")
    folder = tmp_path / family
    tiny_model(family, **FAMILIES[family], max_position_embeddings=256).save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    out = tmp_path / "out"
    assert main(["compress", "--task", "lm-eval", "--lm-eval-tasks", "yes_no", "--lm-eval-include",
                 str(tmp_path / "tasks"), "--data-dir", str(data), "--model", str(folder), "--base", "as-is",
                 "--method", "wanda", "--pattern", "2:4", "--calibration-examples", "4", "--calibration-batch", "2",
                 "--eval-size", "3", "--speed", "none", "--no-progress", "--out", str(out)]) == 0
    card = json.loads((out / "report.json").read_text())
    assert card["kind"] == {"task": "lm-eval", "model": "causal-lm"} and card["llm"]["tasks"]["yes_no"]["n"] == 3
    assert card["language_model"]["base"]["tokens"] > 0
    assert any("wanda: compressed" in note and "% of the model's" in note for note in card["notes"])
