"""Benchmark: the compressed side of the divergence along the base's own answers (``llm/answers.py``) as one
teacher-forced forward per prompt, against generating with the compressed model and comparing its answers.

Both start from the base's greedy answers (generated once, as the cache keeps them; not timed). A: the
compressed model run teacher-forced on prompt + the base's answer (``answers.answer_logits``, batched as
``answers.score_pairs`` batches: prompts of similar length, ``answers.score_batches``), the first divergence read
from its argmax. B: the
compressed model generates its own greedy answers (``answers.generate_answers``: batches of similar length,
left-padded, KV cache, the same end tokens and ``max_new_tokens``), compared with the base's token by token.
C: B's prefill alone (one new token per prompt, the same batches), what A and B both pay; B − C is B's
decoding. Interleaved A, B, C, A, B, C … in one process (the models loaded once), each timing with the load
average; the median ratio B / A is printed, the tokens each side runs, and whether the two give the same first
divergence (and so the same identical answers) on every prompt. A last line times the whole
``compare_answers`` once (base and compressed forwards, KL, thirds, the examples' generation; the base's
answers from the cache).

    python benchmarks/divergence_one_forward.py --data-dir ../shared/data --prompts 50 --max-new-tokens 64
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def by_length(prompt_ids: list) -> list[int]:
    """Prompt indices shortest first: batches of similar length, as ``answers.score_pairs`` forms them."""
    return sorted(range(len(prompt_ids)), key=lambda i: len(prompt_ids[i]))


def one_forward(compressed, answered: dict, pad: int) -> list:
    """A: first divergence per prompt from one teacher-forced forward of the compressed model."""
    from forgetless.llm.answers import SCORE_BATCH, answer_logits, score_batches

    ids, answers, out = answered["prompt_ids"], answered["answers"], {}
    vocabulary = compressed.get_output_embeddings().weight.shape[0]
    for chosen in score_batches(ids, answers, SCORE_BATCH, vocabulary):  # as answers.score_pairs batches them
        rows = [(ids[i], answers[i]) for i in chosen]
        for logits, (_, answer), i in zip(answer_logits(compressed, rows, pad), rows, chosen):
            parted = (logits.argmax(-1) != torch.tensor(answer)).nonzero()
            out[i] = int(parted[0]) if parted.numel() else None
    return [out[i] for i in range(len(ids))]


def generate_and_compare(compressed, answered: dict, max_new_tokens: int, batch: int, pad: int) -> list:
    """B: the compressed model's own greedy answers (batches of similar length too), compared with the base's
    token by token."""
    from forgetless.llm.answers import generate_answers

    order = by_length(answered["prompt_ids"])
    generated = generate_answers(compressed, [answered["prompt_ids"][i] for i in order], max_new_tokens, batch,
                                 answered["ends"], pad)
    own = [mine for _, mine in sorted(zip(order, generated))]
    out = []
    for mine, answer in zip(own, answered["answers"]):
        differ = [i for i, (a, b) in enumerate(zip(answer, mine)) if a != b]
        out.append(differ[0] if differ else (None if len(mine) == len(answer) else min(len(mine), len(answer))))
    return out


def prefill_only(compressed, answered: dict, batch: int, pad: int) -> None:
    """C: B's first step alone (each prompt read, one token generated, the same batches): what B and A both
    pay; B − C is B's decoding."""
    from forgetless.llm.answers import generate_answers

    order = by_length(answered["prompt_ids"])
    generate_answers(compressed, [answered["prompt_ids"][i] for i in order], 1, batch, answered["ends"], pad)


def token_counts(answered: dict, batch: int, vocabulary: int) -> str:
    """The tokens each side runs: A's forwards (prompt + answer, right-padded per batch of ``score_batches``) and
    the logits positions they keep, B's prefill (prompts left-padded per batch of ``batch``) and its decode steps."""
    from forgetless.llm.answers import SCORE_BATCH, score_batches

    ids, answers, order = answered["prompt_ids"], answered["answers"], by_length(answered["prompt_ids"])
    forwards = score_batches(ids, answers, SCORE_BATCH, vocabulary)
    real = sum(len(ids[i]) + len(answers[i]) for i in order)
    padded = sum(len(chosen) * max(len(ids[i]) + len(answers[i]) for i in chosen) for chosen in forwards)
    kept = sum(len(chosen) * (max(len(ids[i]) + len(answers[i]) for i in chosen) - min(len(ids[i]) for i in chosen) + 1)
               for chosen in forwards)
    batches = [order[s:s + batch] for s in range(0, len(order), batch)]
    prefill = sum(len(chosen) * max(len(ids[i]) for i in chosen) for chosen in batches)
    steps = sum(max(len(answers[i]) for i in chosen) for chosen in batches)
    prompt = sum(len(p) for p in ids)
    return (f"A runs {real:,} tokens ({padded:,} with its padding; prompts {prompt:,}, answers {real - prompt:,}) in "
            f"{len(forwards)} forwards keeping the logits of {kept:,} positions; B reads {prefill:,} prompt tokens "
            f"(padded) in {len(batches)} prefills, then about {steps} decode steps of up to {batch} rows")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--generate-batch", type=int, default=16, help="rows per generate call (B)")
    parser.add_argument("--answers-cache", help="a cache folder holding the base's answers of an earlier run "
                                                "(default: a new one: the base answers afresh)")
    parser.add_argument("--method", default="rtn:bits=4,group_size=64", help="the compressed variant (forgetless.apply)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import transformers

    import forgetless
    from forgetless.llm import answers
    from forgetless.offline_models import offline_folder

    print(f"load average before: {load()}; torch threads {torch.get_num_threads()}", flush=True)
    folder = offline_folder("smollm2")  # converted once into the shared cache
    os.environ["FORGETLESS_CACHE"] = args.answers_cache or tempfile.mkdtemp(prefix="divergence-bench-")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    base = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True).eval()
    name, _, options = args.method.partition(":")
    config = forgetless.METHODS.make_config(name, dict(kv.split("=") for kv in options.split(",")) if options else {})
    compressed = forgetless.apply(copy.deepcopy(base), config).eval()
    prompts = answers.prompt_set(Path(args.data_dir) / "llm" / answers.IFEVAL_PROMPTS, args.prompts,
                                 args.max_new_tokens, seed=0)
    started = time.perf_counter()
    answered = answers.base_answers(base, tokenizer, prompts, args.generate_batch)
    pad = answers.pad_id(tokenizer, answered["ends"])
    print(f"SmolLM2-135M-Instruct vs {args.method}: {len(prompts.prompts)} IFEval prompts, at most "
          f"{args.max_new_tokens} new tokens, chat template {answered['chat']}; the base answered in "
          f"{time.perf_counter() - started:.1f} s ({sum(map(len, answered['answers']))} answer tokens)", flush=True)
    print(token_counts(answered, args.generate_batch, compressed.get_output_embeddings().weight.shape[0]), flush=True)
    times = {"A one forward": [], "B generate + compare": [], "C prefill alone": []}
    results = {}
    for repeat in range(args.repeats):
        for label, run in (("A one forward", lambda: one_forward(compressed, answered, pad)),
                           ("B generate + compare",
                            lambda: generate_and_compare(compressed, answered, args.max_new_tokens,
                                                         args.generate_batch, pad)),
                           ("C prefill alone", lambda: prefill_only(compressed, answered, args.generate_batch, pad))):
            started = time.perf_counter()
            with torch.no_grad():
                results[label] = run()
            times[label].append(time.perf_counter() - started)
            print(f"rep {repeat}: {label}: {times[label][-1]:.2f} s (load {load()})", flush=True)
    label = "compare_answers (both forwards, KL)"  # once: the whole card section, the base's answers cached
    started = time.perf_counter()
    results[label] = answers.compare_answers(base, compressed, tokenizer, prompts,
                                             args.generate_batch)["first_divergence"]["positions"]
    times[label] = [time.perf_counter() - started]
    print(f"{label}: {times[label][-1]:.2f} s (load {load()})")
    print(f"load average after: {load()}")
    for label, values in times.items():
        print(f"{label:>38}: {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f}, "
              f"n={len(values)})")
    a, b = results["A one forward"], results["B generate + compare"]
    ratio = statistics.median(times["B generate + compare"]) / statistics.median(times["A one forward"])
    same = sum(x == y for x, y in zip(a, b))
    print(f"B / A: {ratio:.1f}x (median wall time, compressed side only)")
    decode = statistics.median(times["B generate + compare"]) - statistics.median(times["C prefill alone"])
    print(f"B's decoding (B − C): {decode:.2f} s; A − C (A's answer tokens beyond B's prefill): "
          f"{statistics.median(times['A one forward']) - statistics.median(times['C prefill alone']):.2f} s")
    print(f"first divergence equal on {same} of {len(a)} prompts; identical answers: A {sum(x is None for x in a)}, "
          f"B {sum(x is None for x in b)}; compare_answers' positions equal A's: {results[list(times)[3]] == a}")
    differing = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if differing:
        print(f"prompts where A and B differ (index, A, B): {differing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
