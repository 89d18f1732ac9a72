"""Where generation time goes (Ko et al., NASH §3, Finding 3.1 / Figure 3); base-vs-compressed
speed lives in ``speed.py``.

* ``layer_profile``: time of one encoder layer vs sequence length, for several head counts and
  FFN widths (Figure 3: attention width matters little at short lengths, FFN width dominates).
* ``decoder_step_profile``: the decoding step of generation — target length 1 with a key/value
  cache, cross-attending to a source of each length — timed for decoder layer 0 and for the whole
  step (every decoder layer plus the output projection), at the same widths. Finding 3.1: a step
  is cheap per layer but runs once per generated token, so decoder *depth*, not width, sets latency.
* ``stack_share``: the encoder's and the decoder's share of generation time (Finding 3.1: the
  decoder dominates, because it runs once per generated token).
* ``write_profile_report``: ``profile.md`` (tables) and ``profile.png`` (the Figure 3 panels).
"""
from __future__ import annotations

import copy
import statistics
import time
from pathlib import Path

import torch
from torch import nn

from ..fsutil import atomic_write_json
from ..models import surgery
from ..models.adapters import get_adapter
from ..models.gates import HookSet
from .speed import SpeedConfig, time_call


def _inputs(tokenizer, sources: list[str], batch_size: int, max_source_length: int):
    reps = (batch_size + len(sources) - 1) // len(sources)
    batch = (list(sources) * reps)[:batch_size]
    return tokenizer(batch, truncation=True, max_length=max_source_length, padding=True, return_tensors="pt")


def _generate_once(model, enc, max_new_tokens: int, num_beams: int) -> float:
    """Seconds of one fixed-length ``generate`` call (the speed module's timing)."""
    inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    return time_call(model, inputs, SpeedConfig(new_tokens=max_new_tokens, num_beams=num_beams), generate=True)


@torch.no_grad()
def stack_share(model: nn.Module, tokenizer, sources: list[str], batch_size: int = 8, num_beams: int = 1,
                max_new_tokens: int = 16, max_source_length: int = 128, repeats: int = 3) -> dict:
    """Seconds spent in the encoder and decoder stacks during ``generate`` (forward hooks on the
    first / last layer of each stack) and their share of the total."""
    stacks = get_adapter(model).stacks(model)
    spent = {name: 0.0 for name in stacks}
    starts: dict[str, float] = {}
    enc = _inputs(tokenizer, sources, batch_size, max_source_length)
    total = 0.0
    with HookSet() as hooks:
        for name, layers in stacks.items():
            hooks.add(layers[0].register_forward_pre_hook(lambda m, a, n=name: starts.__setitem__(n, time.perf_counter())))
            hooks.add(layers[-1].register_forward_hook(
                lambda m, a, o, n=name: spent.__setitem__(n, spent[n] + time.perf_counter() - starts[n])))
        _generate_once(model, enc, max_new_tokens, num_beams)  # warm-up, not counted
        spent.update({name: 0.0 for name in stacks})
        for _ in range(repeats):
            total += _generate_once(model, enc, max_new_tokens, num_beams)
    out = {f"{name}_seconds": s / repeats for name, s in spent.items()}
    out["total_seconds"] = total / repeats
    for name, s in spent.items():
        out[f"{name}_share"] = s / total if total else 0.0
    out["other_share"] = 1.0 - sum(s for s in spent.values()) / total if total else 0.0
    return out


@torch.no_grad()
def layer_profile(model: nn.Module, seq_lengths=(16, 32, 64, 128, 256), head_fractions=(1.0, 0.5, 0.25),
                  ffn_fractions=(1.0, 0.5, 0.25), batch_size: int = 8, repeats: int = 5) -> list[dict]:
    """Milliseconds per forward of encoder layer 0, narrowed to each (head, FFN) width, by length."""
    adapter = get_adapter(model)
    rows = []
    for hf in head_fractions:
        for ff in ffn_fractions:
            small = _narrow_first_layers(model, hf, ff)  # only encoder layer 0 is timed
            layer = adapter.stacks(small)["encoder"][0]
            site = next(s for s in adapter.attention_sites(small) if s.stack == "encoder" and s.layer == 0)
            ffn_site = next(s for s in adapter.ffn_sites(small) if s.stack == "encoder" and s.layer == 0)
            hidden = ffn_site.output.get().out_features
            for length in seq_lengths:
                x = torch.randn(batch_size, length, hidden)
                layer(x, attention_mask=None)
                times = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    layer(x, attention_mask=None)
                    times.append(time.perf_counter() - start)
                rows.append({"stack": "encoder", "heads": site.num_heads, "ffn": ffn_site.width, "seq_len": length,
                             "ms": 1000 * statistics.median(times)})
    return rows


def _narrow_first_layers(model: nn.Module, head_fraction: float, ffn_fraction: float) -> nn.Module:
    """A copy whose layer 0 of every stack keeps ``head_fraction`` of its heads (self- and
    cross-attention) and ``ffn_fraction`` of its FFN units."""
    adapter = get_adapter(model)
    small = copy.deepcopy(model).eval()
    heads = {s.key: list(range(max(1, round(s.num_heads * head_fraction)))) for s in adapter.attention_sites(small)
             if s.layer == 0}
    units = {s.key: list(range(max(1, round(s.width * ffn_fraction)))) for s in adapter.ffn_sites(small)
             if s.layer == 0}
    surgery.prune_heads(small, heads)
    surgery.prune_ffn(small, units)
    return small


def _start_token(model) -> int:
    config = model.config
    for value in (getattr(config, "decoder_start_token_id", None), getattr(config, "pad_token_id", None),
                  getattr(getattr(config, "decoder", None), "bos_token_id", None)):
        if value is not None:
            return int(value)
    return 0


@torch.no_grad()
def decoder_step_profile(model: nn.Module, seq_lengths=(16, 32, 64, 128, 256), head_fractions=(1.0, 0.5, 0.25),
                         ffn_fractions=(1.0, 0.5, 0.25), batch_size: int = 8, repeats: int = 5) -> list[dict]:
    """Milliseconds of one decoding step (target length 1, with a cache) for decoder layer 0 and
    for the whole step, at each source length and (head, FFN) width of layer 0."""
    adapter = get_adapter(model)
    rows = []
    for hf in head_fractions:
        for ff in ffn_fractions:
            small = _narrow_first_layers(model, hf, ff)
            layer = adapter.stacks(small)["decoder"][0]
            site = next(s for s in adapter.attention_sites(small) if s.stack == "decoder" and s.layer == 0)
            ffn_site = next(s for s in adapter.ffn_sites(small) if s.stack == "decoder" and s.layer == 0)
            clock: dict[str, float] = {}
            handles = [layer.register_forward_pre_hook(lambda m, a: clock.__setitem__("start", time.perf_counter())),
                       layer.register_forward_hook(lambda m, a, o: clock.__setitem__("end", time.perf_counter()))]
            try:
                for length in seq_lengths:
                    generator = torch.Generator().manual_seed(length)
                    ids = torch.randint(5, 100, (batch_size, length), generator=generator)
                    mask = torch.ones_like(ids)
                    encoded = small.get_encoder()(input_ids=ids, attention_mask=mask)
                    step = torch.full((batch_size, 1), _start_token(small), dtype=torch.long)
                    out = small(encoder_outputs=encoded, attention_mask=mask, decoder_input_ids=step, use_cache=True)
                    cache, layer_ms, step_ms = out.past_key_values, [], []
                    for _ in range(repeats):
                        start = time.perf_counter()
                        out = small(encoder_outputs=encoded, attention_mask=mask, decoder_input_ids=step,
                                    past_key_values=cache, use_cache=True)
                        step_ms.append(1000 * (time.perf_counter() - start))
                        layer_ms.append(1000 * (clock["end"] - clock["start"]))
                        cache = out.past_key_values
                    rows.append({"stack": "decoder-step", "heads": site.num_heads, "ffn": ffn_site.width,
                                 "seq_len": length, "ms": statistics.median(layer_ms),
                                 "step_ms": statistics.median(step_ms),
                                 "decoder_layers": len(adapter.stacks(small)["decoder"])})
            finally:
                for h in handles:
                    h.remove()
    return rows


def write_profile_report(result: dict, out_dir) -> list[Path]:
    """``profile.md`` (encoder layer and decoding-step tables, generation shares) and
    ``profile.png`` (NASH Figure 3: layer time vs length per width, encoder | decoding step)."""
    from ..fsutil import atomic_write_text
    from ..report.plots import plt, save_figure

    out_dir = Path(out_dir)
    lines = ["# Encoder-decoder speed profile (NASH Figure 3 / Finding 3.1)", "",
             f"torch threads: {result['threads']}; medians in milliseconds; widths are layer 0's heads / FFN units.", ""]
    for stack, title, extra in (("encoder", "Encoder layer 0, forward over the source", ""),
                                ("decoder-step", "Decoding step (target length 1, with a cache) vs source length",
                                 " | whole step ms")):
        rows = [r for r in result["layer_profile"] if r["stack"] == stack]
        if not rows:
            continue
        lines += [f"## {title}", "", f"| heads | FFN | length | layer ms{extra} |",
                  "|---|---|---|---|" + ("---|" if extra else "")]
        lines += [f"| {r['heads']} | {r['ffn']} | {r['seq_len']} | {r['ms']:.3f}"
                  + (f" | {r['step_ms']:.3f}" if extra else "") + " |" for r in rows]
        lines.append("")
    lines += ["## Share of generation time", "", "| model | encoder | decoder | other | total s |", "|---|---|---|---|---|"]
    for role, share in result["generation_share"].items():
        lines.append(f"| {role} | {100 * share.get('encoder_share', 0):.1f}% | {100 * share.get('decoder_share', 0):.1f}% "
                     f"| {100 * share['other_share']:.1f}% | {share['total_seconds']:.4f} |")
    atomic_write_text(out_dir / "profile.md", "\n".join(lines) + "\n")
    paths = [out_dir / "profile.md"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, stack, title in ((axes[0], "encoder", "encoder layer"), (axes[1], "decoder-step", "decoder layer, one step")):
        widths = sorted({(r["heads"], r["ffn"]) for r in result["layer_profile"] if r["stack"] == stack}, reverse=True)
        for heads, ffn in widths:
            rows = [r for r in result["layer_profile"] if r["stack"] == stack and (r["heads"], r["ffn"]) == (heads, ffn)]
            ax.plot([r["seq_len"] for r in rows], [r["ms"] for r in rows], marker="o", label=f"{heads} heads, FFN {ffn}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("source length (tokens)")
        ax.set_ylabel("ms")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Time per layer vs length and width (NASH Figure 3)")
    paths.append(save_figure(fig, out_dir / "profile.png"))
    return paths


def run_profile(model: nn.Module, tokenizer, out_dir, compressed: tuple | None = None,
                seq_lengths=(16, 32, 64, 128, 256), head_fractions=(1.0, 0.5, 0.25), ffn_fractions=(1.0, 0.5, 0.25),
                batch_size: int = 8, num_beams: int = 1, max_new_tokens: int = 16, source_length: int = 64,
                repeats: int = 3) -> dict:
    """Figure 3 / Finding 3.1 shape: encoder layer and decoding-step time vs length by width; encoder
    vs decoder share of generation time (and of a compressed model's, ``compressed = (model,
    tokenizer)``); written to ``out_dir/profile.json``, ``profile.md`` and ``profile.png``."""
    model.eval()
    sources = [" ".join(["word"] * source_length)]
    result = {"threads": torch.get_num_threads(),
              "layer_profile": layer_profile(model, seq_lengths, head_fractions, ffn_fractions, batch_size, repeats)
              + decoder_step_profile(model, seq_lengths, head_fractions, ffn_fractions, batch_size, repeats),
              "generation_share": {"base": stack_share(model, tokenizer, sources, batch_size, num_beams,
                                                       max_new_tokens, source_length + 2, repeats)}}
    if compressed is not None:
        small, small_tok = compressed
        result["generation_share"]["compressed"] = stack_share(small, small_tok or tokenizer, sources, batch_size,
                                                               num_beams, max_new_tokens, source_length + 2, repeats)
    atomic_write_json(Path(out_dir) / "profile.json", result)
    write_profile_report(result, out_dir)
    return result
