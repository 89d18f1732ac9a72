"""``all_finite`` (``models/checks.py``): the one-reduction check every loaded model passes through
finds a NaN, +inf or -inf anywhere in a tensor of any float type, and passes finite and empty ones."""
import pytest
import torch

from forgetless.models.checks import all_finite


VALUES = [(3.0, True), (float("nan"), False), (float("inf"), False), (-float("inf"), False)]
CASES = [(dtype, value, finite) for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                              torch.float8_e4m3fn) for value, finite in VALUES
         if dtype != torch.float8_e4m3fn or abs(value) != float("inf")]  # e4m3fn stores no infinity


@pytest.mark.parametrize("dtype,value,finite", CASES)
def test_all_finite_finds_any_non_finite_value(dtype, value, finite):
    tensor = torch.ones(5, 7, dtype=torch.float32)
    tensor[4, 6] = value
    assert all_finite(tensor.to(dtype)) is finite


def test_an_empty_tensor_is_finite():
    assert all_finite(torch.zeros(0, 4)) is True


def test_finite_values_whose_sum_overflows_are_finite():
    assert all_finite(torch.full((4,), 3e38)) is True
    assert all_finite(torch.full((8,), 6e4, dtype=torch.float16)) is True
    assert all_finite(torch.tensor([float("inf"), -float("inf"), 1.0])) is False  # inf − inf: the sum is NaN


class _Reads(torch.overrides.TorchFunctionMode):
    """Records every torch computation on a tensor of ``numel`` elements (a pass over the weights; not
    ``numel()`` or ``dtype``, which read no element)."""

    def __init__(self, numel: int):
        super().__init__()
        self.numel, self.calls = numel, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if args and torch.is_tensor(args[0]) and args[0].numel() == self.numel and torch.is_tensor(result):
            self.calls.append(func.__name__)
        return result


def test_a_finite_tensor_is_read_once():
    """Issue 54: ``abs()`` then ``amax()`` read every weight twice (and wrote a copy of it): 6.6 s of a
    SmolLM2 evaluate. One reduction now."""
    tensor = torch.randn(64, 48)
    with _Reads(tensor.numel()) as reads:
        assert all_finite(tensor) is True
    assert reads.calls == ["sum"]
