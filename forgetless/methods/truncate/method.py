"""Truncated student (Du et al. 2023, "Truncated-l6"; Sanh et al. 2019 initialisation idea):
keep ``layers`` transformer layers of the first stack (the first ones by default; see
``_shared/layer_selection`` for the other strategies), physically drop the rest, then fine-tune
(``recovery``)."""
from __future__ import annotations

from ...models.adapters import get_adapter
from ...models.surgery import drop_layers
from .._shared.layer_selection import select_layers
from ..base import CompressionMethod
from .config import TruncateConfig


class Truncate(CompressionMethod):
    config: TruncateConfig

    def prepare(self, model, ctx):
        stacks = get_adapter(model).stacks(model)
        stack = next(iter(stacks))  # the first stack: "encoder"; "decoder" for decoder-only models
        total = len(stacks[stack])
        self.config.check_model({"layers": total}, "the model")
        keep = select_layers(total, self.config.layers, self.config.selection)
        drop_layers(model, stack, keep)
        ctx.layer_map = {stack: keep}
        ctx.notes.append(f"truncate: kept {stack} layers {keep} of {total}"
                         + (", then fine-tuned" if self.config.recovers else ", no recovery training"))
        return model
