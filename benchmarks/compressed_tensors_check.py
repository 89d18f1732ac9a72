"""Does stock transformers load a forgetless GPTQ / RTN folder (compressed-tensors) and generate what
forgetless generates? For the SmolLM2 check of issue 30:

    forgetless compress --model smollm2 --base as-is --method gptq --bits 4 --group-size 64 \
        --task sst2 --data-dir ../shared/data --eval-size 50 --out runs/smollm2-gptq-w4g64
    python benchmarks/compressed_tensors_check.py runs/smollm2-gptq-w4g64/model

Each loader runs in its own fresh process: ``forgetless.load_model``, plain
``AutoModelForCausalLM.from_pretrained(folder)`` and ``from_pretrained(folder,
quantization_config=CompressedTensorsConfig(dequantize=True))``; each prints its greedy continuation
of a few prompts and the logits of the first. The summary gives, per stock loader, whether it loaded
(or its error), whether the generations equal forgetless's and the largest logit difference, then
what the folder stores (``metrics.size.stored_bits``) and ``stock.stock_loadable``'s verdict.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, a small robot"]
NEW_TOKENS = 12

LOAD = """
import json, sys, torch, transformers
folder, how, prompts, new = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
if how == "forgetless":
    from forgetless.models.io import load_model
    model = load_model(folder, with_tokenizer=False)[0]
else:
    extra = {"quantization_config": transformers.CompressedTensorsConfig(dequantize=True)} if how == "dequantize" else {}
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, **extra)
model.eval()
out = {"generated": [], "class": type(model.model.layers[0].mlp.down_proj).__name__}
with torch.no_grad():
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        tokens = model.generate(ids, max_new_tokens=new, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        out["generated"].append(tokenizer.decode(tokens[0, ids.shape[1]:]))
    out["logits"] = model(tokenizer(prompts[0], return_tensors="pt").input_ids).logits[0].tolist()
print(json.dumps(out))
"""


def load(folder: str, how: str) -> dict:
    result = subprocess.run([sys.executable, "-c", LOAD, folder, how, json.dumps(PROMPTS), str(NEW_TOKENS)],
                            capture_output=True, text=True)
    if result.returncode:
        last = [line for line in result.stderr.strip().splitlines() if line.strip()][-1:]
        return {"error": last[0][:300] if last else f"exit {result.returncode}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(folder: str) -> None:
    from forgetless.metrics.size import stored_bits
    from forgetless.models.stock import stock_loadable

    reference = load(folder, "forgetless")
    if "error" in reference:
        raise SystemExit(f"forgetless.load_model failed: {reference['error']}")
    print("forgetless.load_model:", json.dumps(reference["generated"]))
    for how in ("plain", "dequantize"):
        got = load(folder, how)
        if "error" in got:
            print(f"{how}: raises: {got['error']}")
            continue
        diff = max(abs(a - b) for row_a, row_b in zip(got["logits"], reference["logits"]) for a, b in zip(row_a, row_b))
        print(f"{how}: loaded as {got['class']}; generations equal: {got['generated'] == reference['generated']}; "
              f"max |logit difference| {diff:.3g}")
    print("stored:", json.dumps(stored_bits(folder), indent=1))
    print("stock_loadable:", stock_loadable(folder))


if __name__ == "__main__":
    main(str(Path(sys.argv[1])))
