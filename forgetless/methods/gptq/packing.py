"""Integer codes in plain tensors for safetensors: 4-bit codes two to a byte, 8-bit one to a byte.

Byte ``k`` of a packed 4-bit row holds column ``2k`` in its low nibble and column ``2k + 1`` in its
high nibble (an odd width is padded with a zero code); unpacking with the row width gives the
codes back bit for bit.
"""
from __future__ import annotations

import torch


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """``out × in`` codes (each < 2^bits) → ``uint8`` bytes (``out × ceil(in · bits / 8)``)."""
    codes = codes.to(torch.uint8)
    if bits == 8:
        return codes.clone()
    if bits != 4:
        raise ValueError(f"packing supports 4 or 8 bits, got {bits}")
    if int(codes.max()) > 15:
        raise ValueError("a 4-bit code is larger than 15")
    if codes.shape[1] % 2:
        codes = torch.cat([codes, torch.zeros_like(codes[:, :1])], dim=1)
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


def unpack_codes(packed: torch.Tensor, bits: int, columns: int) -> torch.Tensor:
    """Inverse of ``pack_codes`` for a row width of ``columns``."""
    if bits == 8:
        return packed.to(torch.uint8).clone()
    if bits != 4:
        raise ValueError(f"packing supports 4 or 8 bits, got {bits}")
    low, high = packed & 0x0F, packed >> 4
    return torch.stack([low, high], dim=2).reshape(packed.shape[0], -1)[:, :columns].contiguous()
