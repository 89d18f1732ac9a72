"""The serving check: a saved model folder loaded in vLLM, its greedy answers to a fixed prompt set
compared with those of forgetless's own model of the same folder (``compare.py``).

Both engines get the same prompt token ids (forgetless's tokenizer of the folder) and decode greedily
up to ``max_new_tokens``, stopping at the end-of-sequence token. The result says, per prompt, whether
the texts are identical, else the first differing token and the log-probability gap there in each
engine; a folder vLLM cannot load, or vLLM missing, is a result too (``served`` False and why), never
an exception: the check runs on whatever a user gives it.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import ConfigError
from ..llm.answers import device_of, generate_answers
from ..models.checks import check_model_folder
from ..ranges import check_number
from .compare import compare_answers, summary
from .engine import EAGER, run_vllm, vllm_missing, vllm_version

# the fixed prompts (plain text, no chat template: the same ids reach both engines)
PROMPTS = ("The capital of France is",
           "Write a short poem about the sea.",
           "def fibonacci(n):",
           "Explain in one sentence why the sky is blue.",
           "List three fruits that are red:",
           "Translate to French: Good morning, how are you?",
           "Once upon a time, in a small village,",
           "Question: What is 12 plus 30? Answer:")
TOP_LOG_PROBS = 5  # vLLM returns the log-probabilities of its top-k tokens at each position
MAX_NEW_TOKENS = 32
TIMEOUT_S = 900


def check_serve_options(max_new_tokens: int, timeout_s: float, prompts) -> list[str]:
    """The options of the check, before any work; the prompts as a list of non-empty strings."""
    check_number("--max-new-tokens", max_new_tokens, 1, 4096, integer=True)
    check_number("--timeout", timeout_s, 1, 86_400)
    prompts = list(prompts)
    if not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise ConfigError("prompts: expected one or more non-empty texts")
    return prompts


def serve_check(folder: str | Path, prompts=PROMPTS, max_new_tokens: int = MAX_NEW_TOKENS, dtype: str = "auto",
                timeout_s: float = TIMEOUT_S) -> dict:
    """``folder`` served by vLLM and compared with forgetless's model of it (module docstring):
    ``{"folder", "served", "engine", "dtype", "answers": [...], "summary", "kernels"}``, or ``served``
    False with ``why`` (vLLM missing, or its reason for refusing the folder)."""
    from ..models.loading import load_causal_lm, resolve_model_path  # transformers: only when the check runs

    prompts = check_serve_options(max_new_tokens, timeout_s, prompts)
    folder = resolve_model_path(str(folder))  # an offline LLM's name (smollm2): its converted folder
    check_model_folder(folder)
    base = {"folder": str(folder), "engine": vllm_version(), "dtype": dtype, "max_new_tokens": max_new_tokens}
    missing = vllm_missing()
    if missing:
        return {**base, "served": False, "why": f"{missing}; forgetless's own results stand without it"}
    model, tokenizer = load_causal_lm(str(folder))
    prompt_ids = [tokenizer(p)["input_ids"] for p in prompts]
    served = run_vllm({"task": "generate", "model": str(folder), "prompts": prompt_ids, "dtype": dtype,
                       "max_tokens": max_new_tokens, "logprobs": TOP_LOG_PROBS, "enforce_eager": EAGER,
                       "max_model_len": max(len(ids) for ids in prompt_ids) + max_new_tokens}, timeout_s)
    if "error" in served:
        return {**base, "served": False, "why": served["error"]}
    eos = tokenizer.eos_token_id  # plain argmax up to the end token, as vLLM's temperature 0 (llm/answers.py)
    mine = generate_answers(model, prompt_ids, max_new_tokens, 1, [] if eos is None else [eos], eos or 0)
    answers = []
    for prompt, ids, answer, ours in zip(prompts, prompt_ids, served["answers"], mine):
        log_probs = [{int(k): v for k, v in position.items()} for position in answer["log_probs"]]
        answers.append(compare_answers(prompt, ours, answer["token_ids"],
                                       lambda i, ids=ids, ours=ours: next_log_probs(model, ids + ours[:i]),
                                       log_probs, tokenizer.decode))
    return {**base, "served": True, "answers": answers, "summary": summary(answers),
            "kernels": served["log"]["kernels"]}


@torch.inference_mode()
def next_log_probs(model, ids: list[int]) -> dict[int, float]:
    """forgetless's log-probabilities of every next token after ``ids``."""
    logits = model(input_ids=torch.tensor([ids], device=device_of(model))).logits[0, -1].float()
    return dict(enumerate(torch.log_softmax(logits, dim=-1).tolist()))
