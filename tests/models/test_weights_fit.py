"""``all_finite`` (``models/weights_fit.py``): the one-reduction check every loaded model passes through
finds a NaN, +inf or -inf anywhere in a tensor of any float type, and passes finite and empty ones."""
import pytest
import torch

from forgetless.models.weights_fit import all_finite


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
