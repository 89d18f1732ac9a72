"""The process that runs vLLM for forgetless: ``python -m forgetless.serving.worker REQUEST.json RESULT.json``.

vLLM runs in a process of its own (``engine.run_vllm`` starts it): its engine spawns workers (a script
needs ``if __name__ == "__main__"``), its engine may die or hang on a folder it cannot serve, and its
logs name the kernels it picked. The request is JSON: ``task`` ``generate`` (one folder's greedy
answers with their top-k log-probabilities to prompts given as token ids) or ``speed`` (several
folders timed in turn on the same batches: generated tokens/s per batch size and time to first
token). The result is JSON: the task's figures, or ``{"error": vLLM's reason}``. Imports vLLM, so only
this process needs it.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path


def _engine(folder: str, request: dict):
    """A vLLM ``LLM`` of ``folder`` (its own tokenizer, the request's dtype and context length)."""
    from vllm import LLM

    return LLM(model=folder, dtype=request.get("dtype", "auto"), max_model_len=request["max_model_len"], seed=0,
               enforce_eager=request.get("enforce_eager", False), max_num_seqs=request.get("max_num_seqs", 64))


def generate(request: dict) -> dict:
    """Greedy answers of one folder to prompts given as token ids, each with the top-k
    log-probabilities vLLM computed at every generated position."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    llm = _engine(request["model"], request)
    params = SamplingParams(temperature=0.0, max_tokens=request["max_tokens"], logprobs=request["logprobs"],
                            seed=0)
    outputs = llm.generate([TokensPrompt(prompt_token_ids=ids) for ids in request["prompts"]], params,
                           use_tqdm=False)
    answers = []
    for output in outputs:
        completion = output.outputs[0]
        answers.append({"token_ids": list(completion.token_ids),
                        "log_probs": [{str(token): float(lp.logprob) for token, lp in position.items()}
                                      for position in (completion.logprobs or [])]})
    return {"answers": answers}


def _prompts(count: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    """``count`` prompts of ``length`` token ids drawn with a fixed seed (the same for every folder)."""
    draw = random.Random(seed)
    return [[draw.randrange(5, vocab) for _ in range(length)] for _ in range(count)]


def _seconds(llm, prompts: list[list[int]], tokens: int) -> float:
    """Wall seconds of one ``generate`` call decoding exactly ``tokens`` greedy tokens per prompt."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(temperature=0.0, max_tokens=tokens, min_tokens=tokens, ignore_eos=True)
    start = time.perf_counter()
    llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
    return time.perf_counter() - start


def speed(request: dict) -> dict:
    """Every folder of ``request["models"]`` (role → folder) loaded once, then timed in turn, round by
    round (A, B, A, B: drift in the machine's load hits both alike): per batch size the seconds of a
    ``generate`` of ``new_tokens`` tokens per prompt, and the time to first token (one prompt, one
    token). One warm-up call per engine and measure first."""
    engines = {role: _engine(folder, request) for role, folder in request["models"].items()}
    vocab = min(llm.get_tokenizer().vocab_size for llm in engines.values())
    length, tokens, rounds = request["prompt_tokens"], request["new_tokens"], request["rounds"]
    times: dict = {"ttft": {role: [] for role in engines}}
    measures = [("ttft", _prompts(1, length, vocab, seed=1), 1)]
    for batch in request["batch_sizes"]:
        times[f"batch {batch}"] = {role: [] for role in engines}
        measures.append((f"batch {batch}", _prompts(batch, length, vocab), tokens))
    for name, prompts, count in measures:
        for llm in engines.values():
            _seconds(llm, prompts, count)
        for _ in range(rounds):
            for role, llm in engines.items():
                times[name][role].append(_seconds(llm, prompts, count))
    return {"times_s": times}


TASKS = {"generate": generate, "speed": speed}


def reason(exc: BaseException) -> str:
    """vLLM's reason in one line: the exception's type and first line, and its cause's."""
    parts = []
    while exc is not None and len(parts) < 3:
        first = (str(exc).strip().splitlines() or [""])[0][:400]
        parts.append(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)
        exc = exc.__cause__
    return "; caused by ".join(parts)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    try:
        result = TASKS[request["task"]](request)
    except Exception as exc:  # noqa: BLE001 - whatever vLLM raises is the answer: its reason goes back
        result = {"error": reason(exc)}
    out = Path(argv[1])
    part = out.with_suffix(".part")
    part.write_text(json.dumps(result))
    os.replace(part, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
