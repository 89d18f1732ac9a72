"""Model kind ``causal-lm``: a decoder-only language model with its LM head, no classification head.

Classification tasks are scored *zero-shot by label likelihood* (``metrics/zero_shot.py``): a
prompt per task (in the model's chat template when it has one), each label word scored in one
forward pass per example, optionally length-normalised, calibrated (contextual calibration, Zhao et
al. 2021) and k-shot. Training (teacher fine-tuning, a method's recovery training) maximises the
likelihood of the gold label word after the same prompt (loss on the label tokens only). Speed is
prefill latency and per-token decode latency with a KV cache, base vs compressed in the same run,
with defaults scaled to LLM sizes (``evaluate/speed.llm_speed_config``) and the FLOP-limit ratio.
``perplexity`` (``metrics/perplexity.py``) gives the language-modelling check on a held-out text.

An LLM suite (task kind ``lm-eval``: ``llm/suite.py``) is evaluated through lm-evaluation-harness
instead, and its training split is plain calibration text: fed as it is (no prompt), its loss is the
language-modelling loss of every token.
"""
from __future__ import annotations

import os
import statistics
from dataclasses import asdict, is_dataclass

import torch

from ..data.task import PairSet, Task
from ..data.llm_tasks import within_window
from ..data.task_kinds import task_kind
from ..errors import ConfigError, OptionError
from ..llm import cache
from ..llm.suite import evaluate_tasks, say
from ..metrics import zero_shot
from ..metrics.accuracy import pooled_task_accuracy, set_metrics
from ..data.texts import read_texts
from ..metrics.perplexity import default_window, join, perplexity
from ..metrics.speed import SpeedConfig, compare_speed, flop_limit, llm_speed_config
from ..llm.scoring import ROW_TOKENS
from ..models.blocks import is_decoder_only
from ..models.loading import load_causal_lm, model_config
from ..models.memory_fit import check_in_memory_fits, eval_batch_size
from ..training.encode import encode_causal_pairs
from .base import ModelKind
from .in_memory import adopt, is_in_memory


def training_prompts(task: Task, examples, tokenizer) -> tuple[list[str], list[str]]:
    """(prompts, gold label continuations) as zero-shot evaluation builds them (default template)."""
    prompt, chat = zero_shot.prompt_for(task), zero_shot.uses_chat(tokenizer, "auto")
    texts = zero_shot.build_prompts(tokenizer, prompt, examples, chat)
    words = [prompt.words[y] if chat else " " + prompt.words[y] for y in examples.labels]
    return texts, words


def label_pairs(task: Task, examples, tokenizer) -> PairSet:
    """``examples`` as prompt → gold label word pairs (training and gradient-based scoring)."""
    texts, words = training_prompts(task, examples, tokenizer)
    return PairSet(examples.name, texts, [[w] for w in words], examples.source)


def meta_model_of(name_or_config):
    """The causal LM a decoder-only model's config describes (a name, a folder or a config), built on the meta
    device (shapes, no memory, no weights), for ``validate.check_modules``; None for any other model or where
    transformers cannot build it from the config alone (the methods then check when they run)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = model_config(name_or_config) if isinstance(name_or_config, str) else name_or_config
    if config is None or not is_decoder_only(config):
        return None
    model_class = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config.model_type], None)
    try:
        with torch.device("meta"):
            return model_class(config)
    except Exception:  # noqa: BLE001 - a config stock transformers cannot build: the runtime checks apply
        return None


class CausalLMKind(ModelKind):
    name = "causal-lm"
    described = "a causal language model"
    task_kinds = ("classification", "lm-eval")
    served = True

    def check_task(self, task, data_kind: str) -> None:
        """Label likelihood scores classification data (an LLM suite's calibration text included)."""
        if data_kind != "classification":
            raise ConfigError("the causal-lm model kind scores classification tasks by label likelihood; "
                              f"task {task.name!r} is a {task.kind} task")

    def check_config(self, name: str, found=None, flag: str = "--model-kind causal-lm") -> None:
        """Model ``name`` (its config ``found``, default read) is a decoder-only LM, as this kind needs
        (``flag``: what asked for it)."""
        found = model_config(name) if found is None else found
        if found is not None and not is_decoder_only(found):
            raise OptionError(f"{flag}: model {name!r} is a {found.model_type} model, not "
                              "a decoder-only language model (any …ForCausalLM of transformers; e.g. smollm2, "
                              "tiny-llama)")

    def known_modules(self, source, model):
        """The model object given, else the meta-device model ``source``'s config describes (``meta_model_of``)."""
        return model if model is not None else meta_model_of(source)

    def check_run(self, task, config, model, source) -> None:
        """A model read from a name or folder too large to compress in memory: say to stream (issue 51) what the
        run names: its scheme, or its method and ``then`` methods (``apply_streamed`` streams a stack)."""
        if model is None:
            stack = [config.method.name, *(method.name for method in config.then)]
            check_in_memory_fits(source, config.scheme or (stack if len(stack) > 1 else stack[0]))

    def load_model(self, model, task: Task, seed: int = 0, tokenizer=None):
        """A decoder-only LM by name or folder, or a copy of a given model object."""
        if is_in_memory(model):
            return adopt(model, tokenizer, task, self.name)
        return load_causal_lm(model, tokenizer=tokenizer or task.tokenizer, seed=seed)

    def training_set(self, task: Task, tokenizer=None):
        if task_kind(task).calibration_only:
            raise ConfigError(f"task {task.name}: LLM suites are not trained on (pass --base as-is and --recovery none)")
        if not task_kind(task).labelled:
            raise ConfigError("the causal-lm model kind scores classification tasks by label likelihood; "
                              "generation tasks need an encoder-decoder")
        return label_pairs(task, task.train, tokenizer or task.tokenizer)

    def scoring_rows(self, tokenizer, task: Task, examples, max_length: int) -> list[dict]:
        """Prompt + gold label word per example, the loss on the label word's tokens only (as in
        training): the label loss of a gradient-based score (Michel et al. head importance). An LLM
        suite's calibration text: the language-modelling loss of every token."""
        if task_kind(task).calibration_only:
            ids = tokenizer(list(examples.text_a), truncation=True, max_length=max_length)["input_ids"]
            return [{"input_ids": row, "attention_mask": [1] * len(row), "labels": list(row)} for row in ids]
        return encode_causal_pairs(label_pairs(task, examples, tokenizer), tokenizer, max_length)

    def probe_inputs(self, tokenizer, task: Task, n: int, max_length: int) -> dict:
        examples = task.train.subset(range(min(n, len(task.train))))
        if task_kind(task).calibration_only:  # calibration text as it is (llm/suite.py)
            enc = tokenizer(list(examples.text_a), truncation=True, max_length=max_length, padding=True,
                            return_tensors="pt")
            return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        texts, _ = training_prompts(task, examples, tokenizer)
        enc = tokenizer(texts, truncation=True, max_length=max_length, padding=True, return_tensors="pt",
                        add_special_tokens=False)
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def evaluate(self, model, tokenizer, task: Task, eval_config, max_length: int, progress: bool = False) -> dict:
        if task_kind(task).suite:  # lm-evaluation-harness runs the suite (llm/suite.py)
            return self.evaluate_suite(model, tokenizer, task.suite, eval_config.batch_size, progress)
        batch_size, why = eval_batch_size(model, eval_config.batch_size, max_length)  # rows of max_length tokens
        options = {**(asdict(eval_config) if is_dataclass(eval_config) else vars(eval_config)),
                   "batch_size": batch_size, "max_length": max_length,
                   "prompt": zero_shot.describe(task, tokenizer, eval_config)}
        if getattr(eval_config, "perplexity_file", None) and os.path.isfile(eval_config.perplexity_file):
            stat = os.stat(eval_config.perplexity_file)  # the text scored, not only its name
            options["perplexity_file_stat"] = [stat.st_size, stat.st_mtime_ns]
        entry = cache.zero_shot_entry_path(model, tokenizer, task, options)
        return _cached(entry, f"this model's zero-shot scores on {task.name} are", why,
                       lambda: self._score_sets(model, tokenizer, task, eval_config, max_length, batch_size))

    def _score_sets(self, model, tokenizer, task: Task, eval_config, max_length: int, batch_size: int) -> dict:
        """Every evaluation set of a classification task scored zero-shot (``metrics/zero_shot.py``), and
        the held-out perplexity when ``--perplexity-file`` asks for it."""
        sets, predictions, truncated = {}, {}, {}
        for name, examples in task.eval_sets().items():
            scored = zero_shot.score_set(model, tokenizer, task, examples, eval_config, max_length,
                                         batch_size, f"zero-shot {name}")
            sets[name] = set_metrics(examples, scored["predicted"])
            truncated[name] = scored["truncated"]
            predictions[name] = {"predicted": scored["predicted"].tolist(),
                                 "probabilities": scored["probabilities"].round(6).tolist(),
                                 "label_log_likelihoods": scored["label_log_likelihoods"].round(4).tolist()}
        result = {"sets": sets, **pooled_task_accuracy(task, sets), "predictions": predictions,
                  "zero_shot": {**zero_shot.describe(task, tokenizer, eval_config), "max_length": max_length,
                                "batch_size": batch_size, "truncated_prompts": truncated}}
        if getattr(eval_config, "perplexity_file", None):
            texts = read_texts(eval_config.perplexity_file, eval_config.perplexity_texts)
            result["language_model"] = {"file": str(eval_config.perplexity_file), "texts": len(texts),
                                        **perplexity(model, tokenizer, join(texts), default_window(model))}
        return result

    def evaluate_suite(self, model, tokenizer, suite, batch_size: int, progress: bool | None = None) -> dict:
        """An LLM suite: its lm-eval tasks (``llm/suite.evaluate_tasks``), then its perplexity text in
        windows of the model's context capped at 2048 (``metrics/perplexity.py``); kept in the shared cache
        and reused for the same weights and suite (``llm/cache.py``)."""
        if suite.until_interval is not None:
            raise ConfigError("--until-interval scores base and compressed together, round by round: evaluate the "
                              "two models as a pair (evaluate_pair), not one alone")
        batch_size, why = eval_batch_size(model, batch_size, ROW_TOKENS)  # memory decides, up to the requested
        suite = within_window(suite, default_window(model, suite.window))  # llm-generation's passkey sweep
        entry = cache.entry_path(model, tokenizer, suite, batch_size)
        return _cached(entry, "this model's evaluation on the suite is", why,
                       lambda: self._score_suite(model, tokenizer, suite, batch_size, progress))

    def _score_suite(self, model, tokenizer, suite, batch_size: int, progress: bool | None) -> dict:
        """The suite's lm-eval tasks, then its perplexity text (``evaluate_suite`` without the cache)."""
        result = evaluate_tasks(model, tokenizer, suite, default_window(model, suite.window), batch_size, progress)
        if suite.perplexity is not None:
            p, window = suite.perplexity, default_window(model, suite.perplexity.window)
            say(f"{p.name} perplexity: non-overlapping windows of {window} tokens"
                + (f", at most {p.cap}" if p.cap else ""))
            result["language_model"] = {"file": p.source, "protocol": "non-overlapping windows of the joined text",
                                        **perplexity(model, tokenizer, p.text, window, batch_size, p.cap, p.seed)}
        return result

    def evaluate_pair(self, models: dict, tokenizer, task: Task, eval_config, progress: bool | None = None) -> dict:
        """``{role: evaluation}`` of base and compressed on an LLM suite, item by item; with
        ``--until-interval`` scored together until the headline is precise enough (``stopping.py``)."""
        def evaluate(model, suite):
            return self.evaluate_suite(model, tokenizer, suite, eval_config.batch_size, progress)

        if task.suite.until_interval is None:
            return {role: evaluate(model, task.suite) for role, model in models.items()}
        from .stopping import evaluate_until

        return evaluate_until(evaluate, models, task.suite)

    def speed(self, base, compressed, config: SpeedConfig) -> dict:
        """Prefill: one forward over ``seq_len`` tokens (latency at batch ``latency_batch``,
        throughput at ``batch_size``); decode: ``generate`` of ``new_tokens`` greedy tokens with a KV
        cache after that prefill: per-token time = (generate − prefill) / (new_tokens − 1), since
        the first new token comes from the prefill itself; None (not measurable) where timing noise
        makes that difference ≤ 0, with a note. Defaults scaled to LLMs."""
        config = llm_speed_config(config)
        prefill = compare_speed(base, compressed, config, generate=False)
        decode = compare_speed(base, compressed, config, generate=True)
        steps = max(1, config.new_tokens - 1)
        per_token = {}
        for part, key, batch in (("latency", "latency_ms", config.latency_batch),
                                 ("throughput", "throughput_per_s", config.batch_size)):
            ms = {role: 1e3 * (statistics.median(decode["times_s"][part][role])
                               - statistics.median(prefill["times_s"][part][role])) / steps
                  for role in ("base", "compressed")}
            per_token[part] = {"batch": batch, **{role: v if v > 0 else None for role, v in ms.items()}}
            per_token[part]["speedup"] = (ms["base"] / ms["compressed"] if min(ms.values()) > 0 else None)
            if min(ms.values()) <= 0:
                per_token[part]["note"] = ("not measurable: generating took no longer than the prefill alone "
                                           f"(timing noise; load average {os.getloadavg()[0]:.1f})")
        times = {f"prefill {k}": v for k, v in prefill["times_s"].items()}
        times.update({f"generate {k}": v for k, v in decode["times_s"].items()})
        return {**prefill, "config": asdict(config), "mode": "prefill+decode", "times_s": times,
                "decode_ms_per_token": per_token["latency"], "decode_ms_per_token_batch": per_token["throughput"],
                "flop_limit": flop_limit(base, compressed, config)}


def _cached(entry, what: str, why, compute) -> dict:
    """The evaluation kept at ``entry`` of the shared cache (``llm/cache.py``), else ``compute()``'s, stored
    there; either way marked with where it lives, whether it was reused and why the batch size is what it is."""
    kept = cache.load(entry)
    if kept is not None:
        say(f"{what} reused from {entry}")
    result = kept if kept is not None else compute()
    if kept is None:
        cache.store(entry, result)
    result["zero_shot"].update(cache={"path": str(entry) if entry else None, "reused": kept is not None},
                               batch_size_from_memory=why)
    return result
