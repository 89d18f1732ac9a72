"""``print(compared)``: a comparison in a few lines (issue 54: the README's quickstart printed a dict of ~6,000
characters). Hand-made comparisons; every number printed is one of theirs."""
from forgetless.report.card_types import Comparison
from forgetless.report.comparison_text import comparison_text
from typed_cards import typed_comparison

LLM = {"task": {"metric": "acc_norm"}, "warnings": ["base model on piqa: at chance"],
       "language_model": {"base": {"perplexity": 21.714, "windows": 8, "window": 2048},
                          "compressed": {"perplexity": 23.1, "windows": 8, "window": 2048}},
       "llm": {"headline_tasks": ["arc"], "headline": {"delta": {"value": -0.031, "low": -0.05, "high": -0.012}},
               "tasks": {"arc": {"metric": "acc_norm", "in_headline": True,
                                 "acc_norm": {"base": {"value": 0.5}, "compressed": {"value": 0.469},
                                              "delta": {"value": -0.031, "low": -0.05, "high": -0.012}},
                                 "flips": {"correct_to_wrong": 9, "wrong_to_correct": 3}},
                         "piqa": {"metric": "acc_norm", "in_headline": False,
                                  "acc_norm": {"base": {"value": 0.52}, "compressed": {"value": 0.52},
                                               "delta": {"value": 0.0, "low": -0.02, "high": 0.02}},
                                  "flips": {"correct_to_wrong": 2, "wrong_to_correct": 2}}}}}


def test_an_llm_comparison_in_a_few_lines():
    lines = comparison_text(typed_comparison(LLM)).splitlines()
    assert lines[0] == "Mean accuracy of the 1 task above chance, compressed − base: -3.1 [-5.0, -1.2] points"
    arc = next(line for line in lines if line.startswith("arc "))
    assert arc.split() == ["arc", "acc_norm", "50.0", "46.9", "-3.1", "[-5.0,", "-1.2]", "9", "c→w,", "3", "w→c"]
    piqa = next(line for line in lines if line.startswith("piqa"))
    assert "(at chance)" in piqa and "+0.0 [-2.0, +2.0] not measurable" in piqa and "2 c→w, 2 w→c" in piqa
    assert "WikiText-2 perplexity (8 windows of 2048 tokens): 21.71 → 23.10" in lines
    assert "1 warning, read them first: compared.warnings" in lines
    assert lines[-1].endswith("compared.to_dict()") and len("\n".join(lines)) < 800


def test_a_rolling_task_is_a_row_of_perplexities():
    """lm-eval's wikitext (loglikelihood_rolling) has word perplexities, not estimates (it raised before)."""
    rolling = {"output_type": "loglikelihood_rolling", "metric": "word_perplexity", "n": 4, "words": 900, "bytes": 5000,
               "word_perplexity": {"base": 30.123, "compressed": 33.5, "ratio": 33.5 / 30.123}}
    card = {**LLM, "llm": {**LLM["llm"], "tasks": {**LLM["llm"]["tasks"], "wikitext": rolling}}}
    wikitext = next(line for line in comparison_text(typed_comparison(card)).splitlines() if line.startswith("wikitext"))
    assert wikitext.split() == ["wikitext", "word_perplexity", "30.12", "33.50", "1.11×", "–"]


def test_no_headline_when_no_task_is_above_chance():
    at_chance = {**LLM, "llm": {**LLM["llm"], "headline_tasks": [], "headline": None}}
    assert comparison_text(typed_comparison(at_chance)).splitlines()[0].startswith("No headline: no task is above chance")


def test_a_classification_comparison_gives_a_row_a_set():
    card = {"task": {"metric": "accuracy"}, "warnings": [],
            "sets": {"dev": {"base": {"accuracy": 0.9}, "compressed": {"accuracy": 0.85}},
                     "adversarial": {"base": {"accuracy": 0.4}, "compressed": {"accuracy": 0.3}}},
            "intervals": {"delta": {"sets": {"dev": {"value": -0.05, "low": -0.08, "high": -0.02},
                                             "adversarial": {"value": -0.1, "low": -0.2, "high": 0.0}}}}}
    text = comparison_text(typed_comparison(card))
    assert text.splitlines()[0] == "Dev accuracy, compressed − base: -5.0 [-8.0, -2.0] points"
    assert "adversarial  accuracy  40.0  30.0        -10.0 [-20.0, +0.0] not measurable" in text
    assert "warning" not in text and "perplexity" not in text


def test_print_shows_the_summary():
    assert Comparison.__str__ is Comparison.summary


def test_a_generation_task_is_a_row_not_at_chance():
    generation = {"task": {"metric": "acc"}, "warnings": [],
                  "llm": {"headline_tasks": [], "headline": None,
                          "tasks": {"qa": {"output_type": "generate_until", "metric": "exact_match", "in_headline": False,
                                           "score": {"base": {"value": 0.4}, "compressed": {"value": 0.3},
                                                     "delta": {"value": -0.1, "low": -0.2, "high": -0.01}},
                                           "flips": {"correct_to_wrong": 3, "wrong_to_correct": 1}}}}}
    lines = comparison_text(typed_comparison(generation)).splitlines()
    assert lines[0] == "No headline: the suite has no multiple-choice task (each task's change is below)."
    qa = next(line for line in lines if line.startswith("qa"))
    assert qa.split() == ["qa", "exact_match", "40.0", "30.0", "-10.0", "[-20.0,", "-1.0]", "3", "c→w,", "1", "w→c"]
