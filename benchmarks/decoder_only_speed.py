"""Benchmark: prefill and KV-cache decode speed of a physically pruned decoder-only model vs its base.

A tiny-Llama-sized ``LlamaForCausalLM`` built from a config (random weights; speed depends on shapes
only): hidden 512, 8 layers, 8 query heads / 4 key-value heads of size 64 (G = 2), gated FFN 1536,
vocab 32000, untied LM head. Variants, made with forgetless surgery:

  (a) half the key/value groups (2 of 4, with their query heads) and half the FFN units of every
      layer removed;
  (b) 3 of 8 layers removed (about 1/3; kept 0, 2, 4, 5, 7 — evenly spread).

Measured at batch 1: prefill latency (one forward over a 128-token prompt, ``logits_to_keep=1`` as
``generate`` does) and per-token decode latency with a ``DynamicCache`` (32 greedy steps after
the prefill, timed together, divided by 32). Every repeat times base, (a), (b) back to back in a
rotating order; a ratio base / variant is taken within each repeat; the median and the min–max of
the per-repeat ratios are printed, with the load average before and after.

FLOP-proportional limit: multiply-adds counted from the module shapes, 2 FLOPs each —
every linear layer in the decoder layers (2·tokens·in·out), attention scores and the weighted sum
(2 · 2 · query heads · head size · keys per query; causal prefill: token t sees t + 1 keys, a
decode step sees the whole cache) and the LM head for the one position whose logits are kept.
Norms, rotary embeddings, softmax and the embedding look-up are left out (< 1 % here). The limit is
base FLOPs / variant FLOPs; at batch 1 decode is bound by reading the weights, whose size ratio is
printed too (weights read per step: all linear weights of the layers and the LM head).

Usage: python benchmarks/decoder_only_speed.py [--repeats 7] [--prompt 128] [--new-tokens 32] [--threads 1]
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

import torch
import transformers

from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates
from forgetless.models.sites import in_features, out_features
from forgetless.models.transformers_compat import CACHE_ARG, output_cache

CONFIG = dict(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
              num_attention_heads=8, num_key_value_heads=4, head_dim=64, max_position_embeddings=512,
              tie_word_embeddings=False)


def build_base() -> torch.nn.Module:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()


def half_groups_half_ffn(model):
    adapter = get_adapter(model)
    heads = {s.key: list(range(0, s.num_heads, 2)) for s in adapter.attention_sites(model)}
    units = {s.key: list(range(0, s.width, 2)) for s in adapter.ffn_sites(model)}
    return heads, units


# ----- FLOPs from shapes -------------------------------------------------------------------------
def linear_weights(model) -> int:
    """Multiply-adds per token of every linear layer in the decoder layers."""
    return sum(in_features(m) * out_features(m) for _, m in get_adapter(model).prunable_linears(model))


def query_head_width(model) -> int:
    """Σ over layers of (query heads × head size) = attention multiply-adds per (query, key) pair / 2."""
    return sum(site.q.get().out_features for site in get_adapter(model).attention_sites(model) if site.num_heads)


def flops(model, prompt: int, new_tokens: int) -> tuple[float, float]:
    """(prefill FLOPs, mean FLOPs per decode step) counted from the shapes, see the module docstring."""
    lm_head = model.config.hidden_size * model.config.vocab_size
    lin, qk = linear_weights(model), query_head_width(model)
    prefill = 2 * prompt * lin + 2 * 2 * qk * prompt * (prompt + 1) / 2 + 2 * lm_head
    steps = [2 * lin + 2 * 2 * qk * (prompt + i + 1) + 2 * lm_head for i in range(new_tokens)]
    return prefill, sum(steps) / len(steps)


def weight_bytes(model) -> int:
    return (linear_weights(model) + model.config.hidden_size * model.config.vocab_size) * 4


# ----- timing ------------------------------------------------------------------------------------
@torch.no_grad()
def time_once(model, ids: torch.Tensor, new_tokens: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token) for one greedy generation with a KV cache."""
    start = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    prefill = time.perf_counter() - start
    cache, token = output_cache(out), out.logits[:, -1:].argmax(-1)
    start = time.perf_counter()
    for _ in range(new_tokens):
        out = model(input_ids=token, use_cache=True, **{CACHE_ARG: cache})
        cache, token = output_cache(out), out.logits[:, -1:].argmax(-1)
    return prefill, (time.perf_counter() - start) / new_tokens


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()

    base = build_base()
    heads, units = half_groups_half_ffn(base)
    narrow = surgery.prune_ffn(surgery.prune_heads(copy.deepcopy(base), heads), units)
    shallow = surgery.drop_layers(copy.deepcopy(base), "decoder", [0, 2, 4, 5, 7])
    variants = {"base": base, "(a) 1/2 KV groups + 1/2 FFN removed": narrow, "(b) 3 of 8 layers removed": shallow}

    ids = torch.randint(5, CONFIG["vocab_size"], (1, args.prompt), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), Gates(base) as gates:  # the sliced model equals the gated base
        for key, keep in heads.items():
            gates.set_head_mask(key, keep)
        for key, keep in units.items():
            gates.set_ffn_mask(key, keep)
        masked = base(input_ids=ids).logits
    with torch.no_grad():
        diff = (narrow(input_ids=ids).logits - masked).abs().max().item()

    names = list(variants)
    for name in names:  # warm-up
        time_once(variants[name], ids, 4)
    times = {name: [] for name in names}
    for r in range(args.repeats):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate who goes first
        for name in order:
            times[name].append(time_once(variants[name], ids, args.new_tokens))
    load_after = os.getloadavg()

    base_flops, base_bytes = flops(base, args.prompt, args.new_tokens), weight_bytes(base)
    n_base = sum(p.numel() for p in base.parameters())
    print(f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f} (1 min); torch threads "
          f"{torch.get_num_threads()}; {os.cpu_count()} CPUs; torch {torch.__version__}, transformers "
          f"{transformers.__version__}")
    print(f"batch 1, prompt {args.prompt} tokens, {args.new_tokens} decode steps with a KV cache, {args.repeats} "
          f"interleaved repeats; max |sliced − masked| logits of (a): {diff:.1e}\n")
    print("| model | params | prefill ms (median) | prefill speedup | FLOP limit | decode ms/token (median) | "
          "decode speedup | FLOP limit | weight-bytes limit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        pre = [t[0] * 1e3 for t in times[name]]
        dec = [t[1] * 1e3 for t in times[name]]
        model = variants[name]
        f = flops(model, args.prompt, args.new_tokens)
        params = sum(p.numel() for p in model.parameters())
        if name == "base":
            print(f"| {name} | {params / 1e6:.1f} M | {statistics.median(pre):.1f} | 1 | 1 | "
                  f"{statistics.median(dec):.2f} | 1 | 1 | 1 |")
            continue
        pre_ratio = [b[0] / v[0] for b, v in zip(times["base"], times[name])]
        dec_ratio = [b[1] / v[1] for b, v in zip(times["base"], times[name])]
        print(f"| {name} | {params / 1e6:.1f} M ({params / n_base:.2f}) | {statistics.median(pre):.1f} | "
              f"{spread(pre_ratio)}× | {base_flops[0] / f[0]:.2f}× | {statistics.median(dec):.2f} | "
              f"{spread(dec_ratio)}× | {base_flops[1] / f[1]:.2f}× | {base_bytes / weight_bytes(model):.2f}× |")
    print("\nspeedup = base time / variant time within a repeat: median (min–max over repeats)")


if __name__ == "__main__":
    main()
