"""The default `focal` is Du et al.'s appendix-B focal loss with its full gradient; the detached
variant is `focal-reweighted` (same value, different gradient)."""
import torch

from forgetless.registry import OBJECTIVES
from forgetless.objectives.formulas import focal_loss, reweighted_ce_loss


def appendix_b(logits, labels, gamma):
    """L = mean_i(−(1 − p_i)^γ / mean_k((1 − p_k)^γ) · log p_i), written from the softmax."""
    p = torch.softmax(logits, dim=-1)[torch.arange(len(labels)), labels]
    w = (1 - p) ** gamma
    return (-(w / w.mean()) * torch.log(p)).mean()


def grad(fn, logits, labels, gamma):
    x = logits.clone().requires_grad_(True)
    fn(x, labels, gamma).backward()
    return x.grad


def test_focal_gradient_is_autograd_of_appendix_b():
    torch.manual_seed(0)
    logits, labels = torch.randn(16, 3, dtype=torch.float64) * 2, torch.randint(0, 3, (16,))
    for gamma in (1.0, 2.0):
        assert torch.allclose(grad(focal_loss, logits, labels, gamma), grad(appendix_b, logits, labels, gamma),
                              atol=1e-12)
        assert torch.allclose(focal_loss(logits, labels, gamma), appendix_b(logits, labels, gamma), atol=1e-12)
    detached = grad(reweighted_ce_loss, logits, labels, 2.0)
    full = grad(focal_loss, logits, labels, 2.0)
    assert torch.allclose(reweighted_ce_loss(logits, labels, 2.0), focal_loss(logits, labels, 2.0))
    assert (detached - full).norm() / full.norm() > 0.1  # a different gradient, not a rounding difference


def test_focal_objectives_registered():
    labels = torch.tensor([0, 1])
    logits = torch.tensor([[1.0, 0.0], [0.5, 0.2]])
    focal = OBJECTIVES.get("focal")(OBJECTIVES.make_config("focal", {}))
    reweighted = OBJECTIVES.get("focal-reweighted")(OBJECTIVES.make_config("focal-reweighted", {"gamma": 2.0}))
    assert focal.config.name == "focal" and reweighted.config.name == "focal-reweighted"
    assert torch.allclose(focal(logits, labels, {}), reweighted(logits, labels, {}))
