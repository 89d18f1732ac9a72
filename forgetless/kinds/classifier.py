"""Model kind ``classifier``: an encoder with a classification head, run by a forward pass and
argmax, scored by accuracy per set (with hard / easy, groups, pooled challenge accuracy)."""
from __future__ import annotations

from ..metrics.accuracy import evaluate_task
from ..metrics.speed import SpeedConfig, compare_speed
from ..training.encode import encode
from ..models.loading import load_classifier
from .in_memory import adopt, is_in_memory


class ClassifierKind:
    name = "classifier"
    runtimes = ("torch", "torch-bf16", "onnxruntime")  # metrics/runtime.py

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
