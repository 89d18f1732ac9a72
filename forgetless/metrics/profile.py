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
from ..models.transformers_compat import CACHE_ARG, output_cache
from .speed import SpeedConfig, time_call


def _inputs(tokenizer, sources: list[str], batch_size: int, max_source_length: int):
    reps = (batch_size + len(sources) - 1) // len(sources)
    batch = (list(sources) * reps)[:batch_size]
    return tokenizer(batch, truncation=True, max_length=max_source_length, padding=True, return_tensors="pt")


@torch.no_grad()
def stack_share(model: nn.Module, tokenizer, sources: list[str], batch_size: int = 8, num_beams: int = 1,
                max_new_tokens: int = 16, max_source_length: int = 128, repeats: int = 3) -> dict:
    """Seconds spent in the encoder and decoder stacks during ``generate`` (forward hooks on the
    first / last layer of each stack) and their share of the total."""
    stacks = get_adapter(model).stacks(model)
    spent = {name: 0.0 for name in stacks}
    starts: dict[str, float] = {}
    enc = _inputs(tokenizer, sources, batch_size, max_source_length)
    inputs = {k: enc[k] for k in ("input_ids", "attention_mask")}
    timing = SpeedConfig(new_tokens=max_new_tokens, num_beams=num_beams)  # fixed-length generate calls
    total = 0.0
    with HookSet() as hooks:
        for name, layers in stacks.items():
            hooks.add(layers[0].register_forward_pre_hook(lambda m, a, n=name: starts.__setitem__(n, time.perf_counter())))
            hooks.add(layers[-1].register_forward_hook(
                lambda m, a, o, n=name: spent.__setitem__(n, spent[n] + time.perf_counter() - starts[n])))
        time_call(model, inputs, timing, generate=True)  # warm-up, not counted
        spent.update({name: 0.0 for name in stacks})
        for _ in range(repeats):
            total += time_call(model, inputs, timing, generate=True)
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
    rows = []
    for _small, layer, heads, ffn_site in _widths(model, head_fractions, ffn_fractions, "encoder"):
        hidden = ffn_site.output.get().out_features
        for length in seq_lengths:
            x = torch.randn(batch_size, length, hidden)
            layer(x, attention_mask=None)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                layer(x, attention_mask=None)
                times.append(time.perf_counter() - start)
            rows.append({"stack": "encoder", "heads": heads, "ffn": ffn_site.width, "seq_len": length,
                         "ms": 1000 * statistics.median(times)})
    return rows


def _widths(model: nn.Module, head_fractions, ffn_fractions, stack: str):
    """For each (head, FFN) width: a copy narrowed there (``_narrow_first_layers``), its layer 0 of
    ``stack``, that layer's head count and its FFN site."""
    adapter = get_adapter(model)
    for hf in head_fractions:
        for ff in ffn_fractions:
            small = _narrow_first_layers(model, hf, ff)  # only layer 0 is timed
            site = next(s for s in adapter.attention_sites(small) if s.stack == stack and s.layer == 0)
            ffn_site = next(s for s in adapter.ffn_sites(small) if s.stack == stack and s.layer == 0)
            yield small, adapter.stacks(small)[stack][0], site.num_heads, ffn_site


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
    for small, layer, heads, ffn_site in _widths(model, head_fractions, ffn_fractions, "decoder"):
        clock: dict[str, float] = {}
        with HookSet() as hooks:
            hooks.add(layer.register_forward_pre_hook(lambda m, a: clock.__setitem__("start", time.perf_counter())))
            hooks.add(layer.register_forward_hook(lambda m, a, o: clock.__setitem__("end", time.perf_counter())))
            for length in seq_lengths:
                generator = torch.Generator().manual_seed(length)
                ids = torch.randint(5, 100, (batch_size, length), generator=generator)
                mask = torch.ones_like(ids)
                encoded = small.get_encoder()(input_ids=ids, attention_mask=mask)
                step = torch.full((batch_size, 1), _start_token(small), dtype=torch.long)
                out = small(encoder_outputs=encoded, attention_mask=mask, decoder_input_ids=step, use_cache=True)
                cache, layer_ms, step_ms = output_cache(out), [], []
                for _ in range(repeats):
                    start = time.perf_counter()
                    out = small(encoder_outputs=encoded, attention_mask=mask, decoder_input_ids=step,
                                use_cache=True, **{CACHE_ARG: cache})
                    step_ms.append(1000 * (time.perf_counter() - start))
                    layer_ms.append(1000 * (clock["end"] - clock["start"]))
                    cache = output_cache(out)
                rows.append({"stack": "decoder-step", "heads": heads, "ffn": ffn_site.width,
                             "seq_len": length, "ms": statistics.median(layer_ms),
                             "step_ms": statistics.median(step_ms),
                             "decoder_layers": len(adapter.stacks(small)["decoder"])})
    return rows


def run_profile(model: nn.Module, tokenizer, out_dir, compressed: tuple | None = None,
                seq_lengths=(16, 32, 64, 128, 256), head_fractions=(1.0, 0.5, 0.25), ffn_fractions=(1.0, 0.5, 0.25),
                batch_size: int = 8, num_beams: int = 1, max_new_tokens: int = 16, source_length: int = 64,
                repeats: int = 3) -> dict:
    """Figure 3 / Finding 3.1 shape: encoder layer and decoding-step time vs length by width; encoder
    vs decoder share of generation time (and of a compressed model's, ``compressed = (model,
    tokenizer)``); written to ``out_dir/profile.json`` (``report.profile`` renders it)."""
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
    return result
