"""``ModelKind``, the base of every model kind (``classifier.py``, ``seq2seq.py``, ``causal_lm.py``): the facts
and checks ``validate.validate_run`` asks the kind for instead of comparing its name; each check is one
error before any work, and the base checks nothing a kind does not need."""
from __future__ import annotations

from dataclasses import fields

from ..config import LM
from ..errors import OptionError
from ..options import default_of


class ModelKind:
    name: str  # --model-kind
    described: str  # the model in words ("a classifier")
    task_kinds: tuple[str, ...] = ("classification",)  # the kinds of task it scores (``forgetless evaluate``)
    runtimes: tuple[str, ...] = ("torch",)  # --runtime
    seq2seq = False  # an encoder-decoder: a BERT folder becomes a bert2bert of the same depth (``model_dims``)
    class_logits = False  # its model gives class logits (CLEVER estimates)
    served = False  # vLLM serves its folders (``serving/speed.served_for_card``)

    @property
    def language_model(self) -> bool:
        """A decoder-only language model, scored by likelihood: the kinds the LM evaluation options apply to
        (``config.LM``: zero-shot scoring, ``--perplexity-file``); its Linears' inputs are quantized per token."""
        return self.name in LM

    def check_options(self, config) -> None:
        """An evaluation option of another model kind (``option(kinds=)``), a runtime the kind does not
        run or CLEVER estimates of a model without class logits are an error naming what they apply to."""
        eval_config = config.eval
        for f in fields(eval_config):
            kinds = f.metadata.get("kinds")
            if kinds and self.name not in kinds and getattr(eval_config, f.name) != default_of(f):
                raise OptionError(f"{type(eval_config).flag(f.name)}: applies to {' and '.join(kinds)} models, not to "
                                  f"a {self.name} (--model-kind)")
        if not self.class_logits and config.robustness:
            raise OptionError(f"--clever: CLEVER estimates need a classifier's logits; they do not apply to a "
                              f"{self.name} model")
        if eval_config.runtime not in self.runtimes:
            raise OptionError(f"--runtime {eval_config.runtime}: not available for a {self.name} model (it runs "
                              f"under: {', '.join(self.runtimes)})")

    def check_task(self, task, data_kind: str) -> None:
        """The kind runs on ``task``, whose data methods see as ``data_kind`` (``TaskKind.methods_see``)."""

    def check_config(self, name: str, found=None, flag: str = "--model-kind") -> None:
        """Model ``name`` (its config ``found``; ``flag``: what asked for this kind) fits the kind."""

    def check_folder(self, path, found) -> None:
        """A local model folder (not a forgetless folder; its config ``found``) holds what the kind needs."""

    def known_modules(self, source, model):
        """The model whose modules ``validate.check_modules`` checks before any work (``model``: the object
        given, else one built from ``source``'s config), or None: checked when the methods run."""
        return None

    def check_run(self, task, config, model, source) -> None:
        """The kind's own rules of a run on ``task`` (``model``: the object given, or None; ``source``: the
        model the run starts from)."""
