"""Issue 54: where tqdm draws no bar (stderr not a terminal: a log, a captured stream), the long steps
still say how far they got, in labelled lines (``progress.Lines``): the perplexity windows and the layers
of a one-shot calibration (Wanda); none with progress off (``--no-progress``, ``progress.enabled = False``)."""
import pytest

import forgetless
from forgetless import progress
from forgetless.metrics.perplexity import join, perplexity
from forgetless.models.loading import load_causal_lm

TEXTS = ["the doctor saw the lawyer in the morning", "a second line of text about the weather",
         "three more words here", "and a fourth calibration sentence"]


@pytest.fixture
def every_step(monkeypatch):
    """A line at every step (the real pace is one a minute), progress as a script leaves it (None)."""
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.0, raising=False)
    monkeypatch.setattr(progress, "enabled", None)


def test_perplexity_windows_print_labelled_lines_and_none_with_progress_off(every_step, minilm_tokenizer, capsys,
                                                                             monkeypatch):
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    result = perplexity(model, tok, join(TEXTS), window=8)
    count = result["windows"]
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith(f"[forgetless] perplexity ({count} windows of 8 tokens): ") for line in err)
    assert err[-1].startswith(f"[forgetless] perplexity ({count} windows of 8 tokens): {count}/{count} windows (~0 s "
                              "elapsed, ~0 s left)")
    with progress.scope("base"):  # the model it is about, as in a two-model run
        perplexity(model, tok, join(TEXTS), window=8)
    assert capsys.readouterr().err.startswith("[forgetless] base: perplexity (")
    monkeypatch.setattr(progress, "enabled", False)
    perplexity(model, tok, join(TEXTS), window=8)
    assert capsys.readouterr().err == ""


def test_wanda_prints_each_decoder_layer_and_nothing_with_progress_off(every_step, minilm_tokenizer, capsys,
                                                                       monkeypatch):
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    layers = model.config.num_hidden_layers
    forgetless.apply(model, forgetless.WandaConfig(sparsity=0.5), calibration=TEXTS, tokenizer=tok)
    err = capsys.readouterr().err
    for layer in range(1, layers + 1):
        assert f"layers: {layer}/{layers} layers (" in err and f"layer {layer}/{layers}: " in err
    monkeypatch.setattr(progress, "enabled", False)
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    forgetless.apply(model, forgetless.WandaConfig(sparsity=0.5), calibration=TEXTS, tokenizer=tok)
    assert "layers" not in capsys.readouterr().err


def test_a_bar_on_a_terminal_is_tqdms_own(monkeypatch):
    monkeypatch.setattr(progress, "enabled", True)
    shown = progress.bar(range(3), "x")
    assert not isinstance(shown, progress.Lines) and list(shown) == [0, 1, 2]
    monkeypatch.setattr(progress, "enabled", None)
    assert isinstance(progress.bar(range(3), "x"), progress.Lines)  # the test's stderr is no terminal
