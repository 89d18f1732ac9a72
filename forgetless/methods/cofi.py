"""CoFi-style structured pruning for encoder-decoder models (Xia et al. 2022, the baseline of
Ko et al. 2023): L0 masks on heads, FFN units and whole attention / FFN sub-layers in encoder
and decoder. Implementation in ``forgetless.seq2seq.nash``."""
from __future__ import annotations

from ..seq2seq.nash import Cofi, CofiConfig
from .base import METHODS
from .nash import Seq2SeqPruning


@METHODS.register("cofi", CofiConfig)
class CofiMethod(Seq2SeqPruning):
    name = "cofi"
    recipe_cls = Cofi
