"""Markdown of the card's ``llm`` section (``report/llm_section.py`` builds it; schema in
``report/card.py``): the per-task table, acc / acc_norm, hard / medium / easy thirds, task pairs and
perplexity (the papers' WikiText-2 protocol and lm-eval's ``wikitext``)."""
from __future__ import annotations

from ..llm.card import divergence_lines, scoring_lines
from ..llm.records import MULTIPLE_CHOICE, ROLLING
from .card_types import Card, LlmSuite
from .headline import delta_text, estimate_text, flip_cells, paired_cells
from .llm_generation import generation_lines


def kl_basis(llm: LlmSuite) -> str:
    """What the card's KL is computed on (``llm.kl_basis``; cards written before it was recorded: the raw
    log-likelihoods, as ``metrics.paired.choice_kl`` always computed it)."""
    return llm.kl_basis or KL_BASIS


KL_BASIS = ("KL(base‖compressed) in nats between the two models' softmax over each item's choices, from the choices' "
            "summed log-likelihoods (acc's scores, whatever the task's metric: acc_norm picks by log-likelihood per "
            "character), mean over the items")


def llm_markdown(card: Card, plot: list[str]) -> list[str]:
    """The section's lines; ``plot`` (the image line of ``metrics.png``) follows the main table."""
    llm = card.llm
    engine = llm.engine
    tasks = llm.tasks
    choice = {n: t for n, t in tasks.items() if t["output_type"] == MULTIPLE_CHOICE}
    lines = [f"## LLM tasks: base vs compressed, item by item ({engine.get('engine')} {engine.get('version')}, "
             f"{engine.get('shots', 0)}-shot, chat template {'on' if engine.get('chat_template') else 'off'}"
             f"{', generation prompts in the chat template' if engine.get('generation_chat_template') else ''}, "
             f"requests of at most {engine.get('window')} tokens)", "",
             "| task | n | metric | base | compressed | Δ pts | correct→wrong | wrong→correct | McNemar p | "
             "KL(base‖compressed) | Δ hard | Δ easy |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in choice.items():
        he = t["hard_easy"]
        flag = " ⚠ at chance" if t["near_chance"] else ""
        lines.append(f"| {name}{flag} | {t['n']} | {t['metric']} | {paired_cells(t[t['metric']])} | "
                     f"{flip_cells(t['flips'])} | {estimate_text(t['kl'], 1, '.3f')} | "
                     f"{delta_text(he['hard']['accuracy']['delta'])} | {delta_text(he['easy']['accuracy']['delta'])} |")
    for name, t in tasks.items():
        if t["output_type"] not in (MULTIPLE_CHOICE, ROLLING):
            lines.append(f"| {name} | {t['n']} | {t['metric']} | {paired_cells(t['score'])} | "
                         f"{flip_cells(t.get('flips') or {})} | – | – | – |")
    pooled, head = llm.pooled, llm.headline
    if head:
        lines.append(f"| **mean of {len(llm.headline_tasks)} tasks above chance** | {pooled['accuracy']['base']['n']}"
                     f" | | **{estimate_text(head['base'])}** | **{estimate_text(head['compressed'])}** | "
                     f"**{delta_text(head['delta'])}** | {flip_cells(pooled['flips'])} | "
                     f"{estimate_text(pooled['kl'], 1, '.3f')} | | |")
    lines += ["", "Δ: compressed − base in points with its paired 95% bootstrap interval (the same items resampled "
              "for both); \"not measurable\" where the interval includes 0. Flips are pooled over the tasks above chance "
              f"in the last row (exact McNemar test). KL: {kl_basis(llm)}. Δ hard / Δ easy: the change on the third of "
              "the items the base finds hardest / easiest by its own margin; **read them with care**: the base is mostly "
              "wrong on its hard third and right on its easy one, so there the compressed model can mostly only gain, "
              "resp. only lose (regression toward the mean): a positive Δ hard is not robustness; compare the flips "
              "and KL across the thirds below.", *scoring_lines(llm.scoring, llm.stopping), *plot]
    lines += _acc_table(choice) + _thirds(choice) + _pairs(llm) + _perplexity(card, tasks) + generation_lines(tasks)
    lines += divergence_lines(llm.divergence)
    return lines


def _acc_table(choice: dict) -> list[str]:
    rows = [(n, t) for n, t in choice.items() if t.get("acc_norm")]
    if not rows:
        return []
    lines = ["", "### acc and acc_norm (%, 95% interval)", "",
             "| task | acc base | acc compressed | Δ acc | acc_norm base | acc_norm compressed | Δ acc_norm |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, t in rows:
        lines.append(f"| {name} | {paired_cells(t['acc'])} | {paired_cells(t['acc_norm'])} |")
    return lines


def _thirds(choice: dict) -> list[str]:
    if not choice:
        return []
    lines = ["", "### Hard, medium and easy thirds by the base's margin", "",
             "Margin: the gold choice's score minus the best wrong one's, in the task's metric (log-likelihood per "
             "character for acc_norm). The base is mostly wrong on the hard third and right on the easy one, so the "
             "compressed model can mostly only gain on the first and only lose on the last (regression toward the "
             "mean): read the flips and KL across thirds, not the accuracy change alone.", "",
             "| task | third | n | base margin | base | compressed | Δ pts | c→w | w→c | KL |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for name, t in choice.items():
        for part, p in t["hard_easy"].items():
            low, high = p["margin_range"] or (None, None)
            span = "–" if low is None else f"{low:.2f} … {high:.2f}"
            f = p["flips"]
            lines.append(f"| {name} | {part} | {p['n']} | {span} | {paired_cells(p['accuracy'])} | "
                         f"{f['correct_to_wrong']} | {f['wrong_to_correct']} | {estimate_text(p['kl'], 1, '.3f')} |")
    return lines


def _pairs(llm: LlmSuite) -> list[str]:
    lines = []
    for pair in llm.pairs:
        d = pair["difference"]
        reading = ("the interval includes 0: no difference shown" if d["low"] <= 0 <= d["high"] else
                   "loses more on the harder task" if d["value"] < 0 else "loses less on the harder task")
        if not pair["meaningful"]:
            reading = "not meaningful: one of the two is at chance for the base"
        harder, easier, both = (estimate_text(e, spec="+.1f") for e in (pair["delta_harder"], pair["delta_easier"], d))
        lines += ["", f"Task pair: {pair['harder']} vs {pair['easier']}: change {harder} vs {easier} points; "
                      f"difference {both} ({reading})."]
    return lines


def _perplexity(card: Card, tasks: dict) -> list[str]:
    lines = []
    lm = card.language_model
    if lm:
        b, c = lm.base, lm.compressed
        lines += ["", "### Perplexity", "",
                  f"WikiText-2 test ({b['file']}) as the SparseGPT / Wanda scripts measure it: rows joined with "
                  f"two newlines, {b['tokens']:,} tokens, {b['windows']} of {b['windows_total']} non-overlapping windows "
                  f"of {b['window']} tokens ({b['scored']:,} predicted tokens; {b['dropped']} trailing tokens "
                  f"dropped): base **{b['perplexity']:.2f}**, compressed **{c['perplexity']:.2f}** "
                  f"({c['perplexity'] / b['perplexity']:.2f}×; lower is better)."]
    for name, t in tasks.items():
        if t["output_type"] != ROLLING or "word_perplexity" not in t:
            continue
        w, by, bpb = t["word_perplexity"], t["byte_perplexity"], t["bits_per_byte"]
        lines += ["", f"lm-eval `{name}` ({t['n']} documents, {t['words']:,} words, {t['bytes']:,} bytes; rolling "
                      f"windows): word perplexity base {w['base']:.2f}, compressed {w['compressed']:.2f} "
                      f"({w['ratio']:.2f}×); byte perplexity {by['base']:.4f} → {by['compressed']:.4f}; bits per "
                      f"byte {bpb['base']:.4f} → {bpb['compressed']:.4f}."]
    return lines
