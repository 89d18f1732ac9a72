"""``parameter_counts`` (``metrics/size.py``): counts read from the modules, every distinct tensor once and
read once (issue 54: it read every weight twice, 4.2 s of a SmolLM2 evaluate)."""
import torch

from any_decoder import tiny_model
from forgetless.metrics.size import parameter_counts
from forgetless.models.adapters import get_adapter


def test_counts_match_a_direct_count_with_tied_weights_once_and_zeros_in_prunable_layers():
    model = tiny_model("llama", tie_word_embeddings=True)
    linears = [lin for _, lin in get_adapter(model).prunable_linears(model)]
    with torch.no_grad():
        linears[0].weight[:, ::2] = 0  # half of one prunable weight
        model.get_input_embeddings().weight[0] = 0  # a row of the (tied) embedding, outside the layers
    distinct = {id(p): p for p in model.parameters()}.values()
    counts = parameter_counts(model)
    assert counts["total"] == sum(p.numel() for p in distinct)
    assert counts["nonzero"] == sum(int((p != 0).sum()) for p in distinct)
    prunable = sum(lin.weight.numel() for lin in linears)
    assert counts["prunable_weights"] == prunable
    assert counts["prunable_sparsity"] == (linears[0].weight.numel() // 2) / prunable


def test_each_weight_is_read_once():
    model = tiny_model("llama")
    reads = []

    class Reads(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if args and isinstance(args[0], torch.nn.Parameter) and func.__name__ not in ("numel", "__get__"):
                reads.append(id(args[0]))
            return func(*args, **(kwargs or {}))

    with Reads():
        parameter_counts(model)
    assert sorted(reads) == sorted(id(p) for p in model.parameters())
