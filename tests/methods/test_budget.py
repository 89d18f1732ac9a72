"""A bit budget (``methods/_shared/budget.py``, ``allocation.py``): the allocation is optimal on a hand-computed
toy where the greedy by KL per byte is not, and equals brute force on random instances; a tiny Llama under a
budget stays within it, its units take formats from their measured KL, each quantized linear runs its unit's
format, and the one compressed-tensors folder with several config groups loads in plain transformers (fresh
process: ``tests/models/test_compressed_tensors.py``) to logits equal to forgetless's model, bit for bit."""
import copy
import itertools
import json

import pytest
import torch
import transformers

from forgetless.config import TrainConfig
from forgetless.errors import ConfigError, OptionError
from forgetless.kinds import KINDS
from forgetless.methods._shared.allocation import allocate
from forgetless.methods.base import CompressionContext
from forgetless.models.io import load_model, save_model
from forgetless.quantization.layers import GROUPED_ATTR
from forgetless.registry import METHODS
from typed_cards import typed_card

TEXTS = [f"the {w} cat sat on the {v} mat and looked at the dog" for w in ("red", "old", "small") for v in ("big", "new")]


def greedy(costs, values, budget):
    """Start at each unit's cheapest choice, then take the upgrade with the most value saved per byte that fits."""
    picks = [min(range(len(c)), key=lambda i: c[i]) for c in costs]
    while True:
        spent = sum(c[p] for c, p in zip(costs, picks))
        moves = [((values[u][picks[u]] - values[u][i]) / (costs[u][i] - costs[u][picks[u]]), u, i)
                 for u in range(len(costs)) for i in range(len(costs[u]))
                 if costs[u][i] > costs[u][picks[u]] and values[u][i] < values[u][picks[u]]
                 and spent + costs[u][i] - costs[u][picks[u]] <= budget]
        if not moves:
            return picks
        _, u, i = max(moves)
        picks[u] = i


def test_allocation_is_optimal_where_greedy_is_not():
    # unit A: 1 byte at KL 10, 4 bytes at KL 0; unit B: 1 byte at KL 5, 2 bytes at KL 0; 5 bytes in all.
    # Greedy upgrades B first (5 KL per byte against A's 10/3), then A no longer fits: KL 10.
    # Optimal by hand: A upgraded, B not: 4 + 1 = 5 bytes, KL 0 + 5 = 5.
    costs, values = [[1, 4], [1, 2]], [[10.0, 0.0], [5.0, 0.0]]
    assert greedy(costs, values, 5) == [0, 1]
    assert allocate(costs, values, 5) == [1, 0]
    assert allocate(costs, values, 6) == [1, 1] and allocate(costs, values, 2) == [0, 0]
    assert allocate([[1, None], [3, 1]], [[1.0, 0.0], [0.0, 9.0]], 4) == [0, 0]  # None: never offered
    with pytest.raises(ValueError, match="no assignment fits 1 bytes"):
        allocate(costs, values, 1)


def test_allocation_equals_brute_force():
    generator = torch.Generator().manual_seed(0)
    for trial in range(30):
        units, options = 5, 3
        costs = torch.randint(1, 9, (units, options), generator=generator).tolist()
        values = torch.rand(units, options, generator=generator).tolist()
        budget = int(torch.randint(5, 30, (1,), generator=generator))
        fits = [p for p in itertools.product(range(options), repeat=units)
                if sum(costs[u][i] for u, i in enumerate(p)) <= budget]
        if not fits:
            continue
        best = min(sum(values[u][i] for u, i in enumerate(p)) for p in fits)
        picked = allocate(costs, values, budget)
        assert sum(costs[u][i] for u, i in enumerate(picked)) <= budget
        assert sum(values[u][i] for u, i in enumerate(picked)) == pytest.approx(best), trial


@pytest.fixture(scope="module")
def budgeted():
    """A tiny Llama (widths 64 and 128: groups of 128 fit down_proj only) quantized by rtn with a 6-bit budget
    over single linears, and its method."""
    from tiny_bert import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=64, pad_token_id=0)
    model = transformers.LlamaForCausalLM(config).eval()
    ctx = CompressionContext(task=None, tokenizer=tokenizer, teacher=None, work_dir=None,
                             train_config=TrainConfig(progress=False), seed=0, kind=KINDS["causal-lm"],
                             calibration=TEXTS)
    method = METHODS.build(METHODS.make_config("rtn", {"bits_budget": 6.0, "sensitivity": "linears"}))
    return method.compress(model, ctx).eval(), method, ctx


def test_budget_is_kept_and_each_linear_runs_its_format(budgeted):
    model, method, ctx = budgeted
    section = method.report_section()["budget"]
    assert section["units"] == "linears" and len(section["assignment"]) == 14
    assert section["bits_per_weight"] <= 6.0 and section["feasible"][0] < 6.0 < section["feasible"][1]
    assert section["bits_per_weight"] == pytest.approx(8 * section["bytes"] / section["weights"])
    for row in section["assignment"]:
        linear = model.get_submodule(row["unit"])
        codes = getattr(linear, GROUPED_ATTR, None)
        if row["format"] == "kept":
            assert codes is None and row["kl"] == 0.0
        else:
            assert codes.bits == {"W4A16-g128": 4, "W4A16-g64": 4, "W8A16": 8}[row["format"]], row
            assert codes.group_size == {"W4A16-g128": 128, "W4A16-g64": 64}.get(row["format"], linear.in_features)
            assert codes.strategy == ("channel" if row["format"] == "W8A16" else "group"), row
            assert row["kl"] == row["kl_by_format"][row["format"]]
        if not row["unit"].endswith("down_proj"):
            assert "W4A16-g128" not in row["kl_by_format"]  # 64 inputs: no group of 128 fits
    assert len({row["format"] for row in section["assignment"]}) >= 2
    # the choice is the cheapest in KL at its bytes: no single unit's swap both fits and lowers the sum
    assert section["kl_sum"] == pytest.approx(sum(row["kl"] for row in section["assignment"]))
    assert any("bit budget 6 bits per weight over 14 units (linears)" in note for note in ctx.notes)
    assert method.report_section()["quantization"]["bits"] is None  # the mix has no one bit width


def test_one_folder_with_several_config_groups(budgeted, tmp_path):
    """The folder's groups (plain transformers loads it to equal logits in a fresh process:
    ``tests/models/test_compressed_tensors.py``, its ``budget_6_linears`` folder)."""
    model, method, _ = budgeted
    save_model(model, tmp_path / "mixed")
    config = json.loads((tmp_path / "mixed" / "config.json").read_text())["quantization_config"]
    assignment = method.report_section()["budget"]["assignment"]
    used = {row["format"] for row in assignment if row["format"] != "kept"}
    assert len(config["config_groups"]) == len(used) >= 2 and config["format"] == "pack-quantized"
    assert sorted(t for g in config["config_groups"].values() for t in g["targets"]) == sorted(
        row["unit"] for row in assignment if row["format"] != "kept")
    assert {row["unit"] for row in assignment if row["format"] == "kept"} <= set(config["ignore"])
    loaded = load_model(tmp_path / "mixed", with_tokenizer=False)[0]
    ids = torch.arange(24).reshape(2, 12) % 100
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, model(input_ids=ids).logits)


def test_budget_outside_the_range_is_one_error_before_any_work(budgeted):
    with pytest.raises(OptionError, match=r"^bits_budget=3: below the smallest candidate; feasible: 4.25 "
                                          r"\(W4A16-g128\) to below 32 \(kept"):
        METHODS.make_config("gptq", {"bits_budget": 3.0})
    model = transformers.LlamaForCausalLM(budgeted[0].config).eval()
    method = METHODS.build(METHODS.make_config("gptq", {"bits_budget": 4.3}))
    with pytest.raises(ConfigError, match=r"^bits_budget=4.3: below the least this model's 2 units can store "
                                          r".*feasible: 4.5 to below 32 bits per weight"):
        method.check_fits(model)  # blocks: q_proj's 64 inputs take no group of 128


def test_card_says_when_the_uniform_check_was_skipped(budgeted):
    from forgetless.report.sections import method_sections

    section = {**budgeted[1].report_section()["budget"], "uniform_check": None}
    card = typed_card({"method": {"sections": {"budget": section}}})
    lines = method_sections(card).budget.markdown(card.plots or [])
    assert lines[1] == "## Bit budget: 6 bits per weight" and lines[-1] == "No uniform check (--no-uniform-check)."
    assert sum(line.startswith("| model.layers.") for line in lines) == 14  # every unit's row


def test_verdict_reads_the_paired_interval():
    from forgetless.methods._shared.uniform_check import verdict

    assert verdict({"value": 0.02, "low": 0.001, "high": 0.04}) == "better"
    assert verdict({"value": -0.02, "low": -0.04, "high": -0.001}) == "worse"
    assert verdict({"value": 0.01, "low": -0.01, "high": 0.03}) == "not measurably different"
    assert verdict({"value": None, "low": None, "high": None}) == "not measured"


def test_compare_plot_puts_the_uniform_check_beside_its_mix():
    from forgetless.report.plots import _uniform_points, plt

    section = {"bytes": 2_000_000, "uniform_check": {"format": "W4A16-g64", "bytes": 3_000_000,
                                                     "headline": {"uniform": {"value": 0.5, "low": 0.4, "high": 0.6}}}}
    cards = {"mixed": typed_card({"method": {"sections": {"budget": section}}}),
             "plain": typed_card({"method": {"sections": {}}})}
    fig, ax = plt.subplots()
    _uniform_points(ax, cards, lambda card, role: 10.0)  # the mix: 10 MB
    (bar,) = ax.containers  # one error bar: the uniform point
    line = bar.lines[0]
    assert list(line.get_xdata()) == [11.0] and list(line.get_ydata()) == [50.0]  # 10 MB + 1 MB more, 50%
    assert [t.get_text() for t in ax.texts] == ["mixed: uniform W4A16-g64"]
    plt.close(fig)


def test_the_uniform_model_is_the_same_at_every_budget(budgeted):
    """The uniform check's model depends on its format only, not on the budget that asked for it: two budgets
    whose check is W4A16-g64 build bit-identical models, so the evaluation cache (keyed by the weights' digest)
    answers the second from the first (the findings' 4.25 and 4.5, 5 and 6)."""
    from forgetless.llm.cache import model_digest
    from forgetless.methods._shared.budget import candidate_config
    from forgetless.quantization.candidates import parse

    _, _, ctx = budgeted
    base = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=len(ctx.tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0)).eval()
    digests = set()
    for budget in (4.75, 6.0):
        config = METHODS.make_config("gptq", {"bits_budget": budget, "calibration_examples": 4})
        uniform = METHODS.build(candidate_config(config, parse("W4A16-g64"))).compress(copy.deepcopy(base), ctx)
        digests.add(model_digest(uniform))
    assert len(digests) == 1 and None not in digests
