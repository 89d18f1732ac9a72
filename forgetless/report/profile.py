"""The encoder-decoder speed profile rendered (NASH Figure 3 / Finding 3.1): ``profile.md`` (tables)
and ``profile.png`` (layer time vs length per width, encoder | decoding step) from the numbers
``metrics.profile.run_profile`` measured."""
from __future__ import annotations

from pathlib import Path

from ..fsutil import atomic_write_text
from .plots import plt, save_figure


def write_profile_report(result: dict, out_dir) -> list[Path]:
    """``profile.md`` (encoder layer and decoding-step tables, generation shares) and
    ``profile.png`` (NASH Figure 3: layer time vs length per width, encoder | decoding step)."""
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
