"""Model kinds answer for themselves (``kinds/base.py``): what each declares, and no code outside the kinds'
own modules compares a kind's name (``kind.name == "causal-lm"``) where it could ask the kind."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from forgetless.errors import OptionError
from forgetless.kinds import KINDS
from forgetless.kinds.base import ModelKind

PACKAGE = Path(__file__).resolve().parents[2] / "forgetless"
KIND_NAMES = ("classifier", "seq2seq", "causal-lm", "classification", "generation", "lm-eval")


def kind_name_comparisons() -> list[str]:
    """``file:line`` of each comparison with a kind's name outside ``kinds/`` and ``data/task_kinds.py``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith(("kinds/", "data/task_kinds.py")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                values += [e for v in values if isinstance(v, (ast.Tuple, ast.List, ast.Set)) for e in v.elts]
                if any(isinstance(v, ast.Constant) and v.value in KIND_NAMES for v in values):
                    found.append(f"{where}:{node.lineno}")
    return found


def test_no_code_outside_the_kinds_compares_a_kind_name():
    assert kind_name_comparisons() == []


def test_each_kind_declares_what_the_checks_ask():
    classifier, seq2seq, causal = KINDS["classifier"], KINDS["seq2seq"], KINDS["causal-lm"]
    assert all(isinstance(kind, ModelKind) for kind in KINDS.values())
    assert [k.seq2seq for k in (classifier, seq2seq, causal)] == [False, True, False]
    assert [k.class_logits for k in (classifier, seq2seq, causal)] == [True, False, False]
    assert [k.served for k in (classifier, seq2seq, causal)] == [False, False, True]
    assert [k.language_model for k in (classifier, seq2seq, causal)] == [False, False, True]
    assert causal.task_kinds == ("classification", "lm-eval") and seq2seq.runtimes == ("torch",)
    given = object()
    assert classifier.known_modules("a-folder", given) is None  # only a causal LM's modules are checked early
    assert causal.known_modules("a-folder", given) is given


def test_a_causal_lm_is_decoder_only_by_its_config():
    import transformers

    bert, llama = transformers.BertConfig(), transformers.LlamaConfig()
    KINDS["causal-lm"].check_config("a-llama", llama)
    KINDS["classifier"].check_config("a-bert", bert)  # a classifier asks nothing of the config here
    with pytest.raises(OptionError) as refused:
        KINDS["causal-lm"].check_config("a-bert", bert, flag="--task lm-eval")
    assert refused.value.args[0] == ("--task lm-eval: model 'a-bert' is a bert model, not a decoder-only language "
                                     "model (any …ForCausalLM of transformers; e.g. smollm2, tiny-llama)")


def test_a_causal_lm_refuses_a_generation_task():
    from forgetless.errors import ConfigError
    from forgetless.kinds import check_compatible
    from forgetless.registry import OBJECTIVES

    class Task:
        kind, name = "generation", "xsum"

    with pytest.raises(ConfigError) as refused:
        check_compatible(Task(), None, OBJECTIVES.config("ce"), "causal-lm")
    assert refused.value.args[0] == ("the causal-lm model kind scores classification tasks by label likelihood; "
                                     "task 'xsum' is a generation task")
