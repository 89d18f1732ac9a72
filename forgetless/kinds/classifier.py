"""Model kind ``classifier``: an encoder with a classification head, run by a forward pass and
argmax, scored by accuracy per set (with hard / easy, groups, pooled challenge accuracy)."""
from __future__ import annotations

from ..errors import OptionError
from ..metrics.accuracy import evaluate_task
from ..metrics.speed import SpeedConfig, compare_speed
from ..training.encode import encode
from ..models.checks import check_classifier_head, is_trained_classifier
from ..models.loading import load_classifier, model_config
from ..models.tiny import TINY_MODELS
from .base import ModelKind
from .in_memory import adopt, is_in_memory


class ClassifierKind(ModelKind):
    name = "classifier"
    described = "a classifier"
    runtimes = ("torch", "torch-bf16", "onnxruntime")  # metrics/runtime.py
    class_logits = True

    def check_folder(self, path, found) -> None:
        """A folder saved from a trained classifier holds its classification head."""
        check_classifier_head(path, found)

    def check_run(self, task, config, model, source) -> None:
        """``--base as-is`` scores a classifier as it is: its classification head must have been trained
        (a folder saved from a ``*ForSequenceClassification`` model); a base model's head would be random."""
        if config.base != "as-is" or model is not None or config.model in TINY_MODELS:
            return
        found = model_config(config.model)
        if found is not None and not is_trained_classifier(found):
            raise OptionError(f"--base as-is: model {config.model!r} has no trained classification head (its head "
                              "would be random); fine-tune it (--base fine-tune), give a fine-tuned classifier folder, "
                              "or score an LLM zero-shot (--model-kind causal-lm)")

    def load_model(self, model, task, seed: int = 0, tokenizer=None):
        """A classifier for the task's labels: pretrained (new seeded head), tiny, saved, or a copy of
        a given model object (``in_memory.adopt``)."""
        if is_in_memory(model):
            return adopt(model, tokenizer, task, self.name)
        return load_classifier(model, task.label_names, seed=seed, tokenizer=tokenizer or task.tokenizer)

    def training_set(self, task, tokenizer=None):
        return task.train

    def scoring_rows(self, tokenizer, task, examples, max_length: int) -> list[dict]:
        """Encoded ``examples`` whose ``labels`` are the classes (a gradient-based score's loss)."""
        return encode(examples, tokenizer, max_length)

    def probe_inputs(self, tokenizer, task, n: int, max_length: int) -> dict:
        train = task.train
        return tokenizer(train.text_a[:n], train.text_b[:n] if train.text_b else None, truncation=True,
                         max_length=max_length, padding=True, return_tensors="pt")

    def evaluate(self, model, tokenizer, task, eval_config, max_length: int, progress: bool = False) -> dict:
        """Metrics per set, the pooled challenge accuracy and per-example ``predictions``."""
        return evaluate_task(model, tokenizer, task, eval_config.batch_size, max_length, progress)

    def speed(self, base, compressed, config: SpeedConfig) -> dict:
        return compare_speed(base, compressed, config, generate=False)
