"""A model card's load recipe is tested on the folder it describes (issue 54): every Python block of the
card's "How to load" section, run as printed (the folder's path put in for ``path/to/this/folder``) in
a fresh process, loads the model to the logits it had in memory. A tiny Mixtral quantized as
W4A16-AWQ (asymmetric experts, which stock transformers 5.24 cannot load) and a tiny Llama
W4A16-AWQ (stock loading with ``CompressedTensorsConfig(dequantize=True)``)."""
import os
import re
import subprocess
import sys

import pytest
import torch
import transformers
from safetensors.torch import save_file

import forgetless
from forgetless.models.stock import stock_loadable
from forgetless.report.model_card import write_model_card

from any_decoder import TEXTS, char_tokenizer, left_padded, tiny_model

torch.set_num_threads(1)
RUN_RECIPE = """
import sys, torch
from safetensors.torch import load_file
torch.set_num_threads(1)
folder, recipe = sys.argv[1], open(sys.argv[2]).read()
scope = {}
exec(recipe.replace("path/to/this/folder", folder), scope)
expected = load_file(folder + ".logits.safetensors")
with torch.no_grad():
    got = scope["model"].eval()(input_ids=expected["input_ids"], attention_mask=expected["attention_mask"]).logits
print(torch.allclose(got, expected["logits"], atol=1e-5))
"""


def load_recipes(card: str) -> list[str]:
    """The Python blocks of a model card's "How to load" section, as printed."""
    section = card.split("## How to load", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def awq_folder(family: str, root) -> tuple:
    """A tiny ``family`` model quantized as W4A16-AWQ (groups of 16: the tiny widths) and saved with its card."""
    config = forgetless.METHODS.make_config("awq", {"bits": 4, "group_size": 16, "asymmetric": True,
                                                   "calibration_examples": 4})
    model = forgetless.apply(tiny_model(family), config, calibration=TEXTS, tokenizer=char_tokenizer())
    folder = forgetless.save_model(model, root / family, tokenizer=char_tokenizer())
    ids, mask = left_padded()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    save_file({"input_ids": ids, "attention_mask": mask, "logits": logits}, str(root / f"{family}.logits.safetensors"))
    return folder, write_model_card(folder).read_text()


@pytest.mark.parametrize("family", ["mixtral", "llama"])
def test_every_load_recipe_of_the_card_loads_the_folder_it_describes(family, tmp_path):
    folder, card = awq_folder(family, tmp_path)
    recipes = load_recipes(card)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    for i, recipe in enumerate(recipes):
        path = tmp_path / f"recipe-{i}.py"
        path.write_text(recipe)
        done = subprocess.run([sys.executable, "-c", RUN_RECIPE, str(folder), str(path)], capture_output=True,
                              text=True, env=env)
        assert done.returncode == 0 and done.stdout.split()[-1] == "True", (recipe, done.stderr[-1500:])
    stock = [r for r in recipes if "from_pretrained" in r]
    if family == "mixtral":  # its experts: stock loading raises, the card says so and prints forgetless' loader only
        assert not stock and "cannot rebuild this model" in card and "Asymmetric quant requires zero-point" in card
        assert stock_loadable(folder)[0] is False
    else:
        assert len(stock) == 1 and "CompressedTensorsConfig(dequantize=True)" in stock[0]


def test_stock_loading_of_asymmetric_experts_raises_as_the_card_says(tmp_path):
    """What the Mixtral card's warning states: the dequantizing recipe fails on the experts."""
    folder, _ = awq_folder("mixtral", tmp_path)
    with pytest.raises(Exception, match="conversion of the weights"):
        transformers.AutoModelForCausalLM.from_pretrained(
            folder, use_safetensors=True, quantization_config=transformers.CompressedTensorsConfig(dequantize=True))
