"""NASH / CoFi registered as compression methods (prepare → train → finalize through the method
contract), encoder-pruning variants (Table 4), and bert2bert warm-started from the bundled MiniLM."""
import copy

import pytest
import torch

from forgetless.errors import ConfigError
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates
from forgetless.data.tasks import load_task
from forgetless.kinds import KINDS
from forgetless.methods.nash.config import NashConfig
from forgetless.methods.nash.method import Nash
from forgetless.models.tiny import tiny_seq2seq
from forgetless.registry import OBJECTIVES
from forgetless.training.trainer import TrainConfig


pytestmark = pytest.mark.usefixtures("one_thread")


def _tiny(kind="tiny-bert2bert"):
    task = load_task("synthetic-lookup", seed=1, train_size=32, eval_size=4)
    tok = task.tokenizer
    model = tiny_seq2seq(kind, len(tok), pad=tok.pad_token_id, bos=tok.cls_token_id, eos=tok.sep_token_id).eval()
    return task, tok, model


@pytest.mark.parametrize("name, options", [("nash", {"decoder_layers": 2, "finetune_epochs": 0}),
                                           ("cofi", {"sparsity": 0.4, "finetune_epochs": 0})])
def test_registered_methods_compress(name, options, tmp_path):
    task, tok, model = _tiny()
    method = METHODS.get(name)(METHODS.make_config(name, options))
    objective = OBJECTIVES.build("nash-distil")
    ctx = CompressionContext(task=task, tokenizer=tok, teacher=model, work_dir=tmp_path, objective=objective,
                             train_config=TrainConfig(epochs=1, batch_size=16, max_length=64, learning_rate=1e-3,
                                                      progress=False), kind=KINDS["seq2seq"])
    objective.prepare(ctx)
    student = method.compress(copy.deepcopy(model), ctx)
    assert not hasattr(student, "l0_masks") and student.num_parameters() < model.num_parameters()
    assert ctx.notes and name in ctx.notes[0] and method.artifacts()["masked_equals_sliced"] is True
    if name == "nash":
        assert surgery.model_shape(student)["layers"] == {"encoder": 4, "decoder": 2}
    with pytest.raises(ConfigError):
        METHODS.make_config(name, {"no_such_option": 1})


def test_encoder_pruning_variants_and_errors():
    _, _, model = _tiny("tiny-t5")
    layers = Nash(NashConfig(decoder_layers=2, encoder_pruning="layers", encoder_sparsity=0.5))
    assert surgery.model_shape(layers.prepare(copy.deepcopy(model), None))["layers"] == {"encoder": 2, "decoder": 2}
    assert layers.layers == {"encoder": [0, 3], "decoder": [0, 3]}
    none = Nash(NashConfig(decoder_layers=3, decoder_selection="last", encoder_pruning="none"))
    student = none.prepare(copy.deepcopy(model), None)
    assert none.layers["decoder"] == [1, 2, 3] and not hasattr(student, "l0_masks")
    for bad in ({"encoder_pruning": "random"}, {"encoder_sparsity": 1.0}, {"decoder_layers": 0},
                {"decoder_selection": "uniform"}):
        with pytest.raises(ConfigError):
            NashConfig(**bad)
    with pytest.raises(ConfigError, match="exceeds the model's 4 decoder layers"):
        Nash(NashConfig(decoder_layers=100)).prepare(copy.deepcopy(model), None)


def test_bert2bert_from_bundled_minilm_masked_equals_sliced():
    from forgetless.models.loading import load_seq2seq

    model, tok = load_seq2seq("minilm")
    model.eval()
    assert model.config.decoder_start_token_id == tok.cls_token_id and model.config.eos_token_id == tok.sep_token_id
    enc = tok(["who wrote the tweet about the weather", "a short one"], return_tensors="pt", padding=True)
    adapter = get_adapter(model)
    assert len(adapter.stacks(model)["decoder"]) == 6 and len(adapter.attention_sites(model)) == 18
    heads = {("encoder", 2, "self"): [0, 5, 7], ("decoder", 1, "cross"): list(range(6)),
             ("decoder", 4, "self"): [1, 2]}
    kw = dict(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], max_new_tokens=5, min_new_tokens=5,
              do_sample=False)
    with torch.no_grad(), Gates(model, ffn=False, layers=True) as gates:
        for key, keep in heads.items():
            gates.set_head_mask(key, keep)
        gates.set_layer_mask("decoder", [0, 1, 4, 5])
        ref = model.generate(**kw)
    surgery.prune_heads(model, heads)
    surgery.drop_layers(model, "decoder", [0, 1, 4, 5])
    assert model.config.decoder.num_hidden_layers == 4
    with torch.no_grad():
        assert torch.equal(model.generate(**kw), ref)
