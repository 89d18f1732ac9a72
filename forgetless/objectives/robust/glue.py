"""Model and Trainer glue shared by the robust fine-tuning objectives (R-Drop, SMART, FreeLB,
Child-Tuning_D, ROSE): embedding perturbation by a forward hook, repeating a dropout mask, the
transformer-layer parameters a selection method acts on and the Trainer's own backward scaling."""
from __future__ import annotations

import contextlib

import torch
from accelerate.utils import DistributedType
from torch import nn

from ...errors import ConfigError, UnsupportedModelError
from ...models.adapters import get_adapter
from ...models.gates import HookSet


def unwrap(model: nn.Module) -> nn.Module:
    """The model inside a DDP / DataParallel wrapper."""
    return getattr(model, "module", model)


def classification_only(objective: str, logits: torch.Tensor) -> None:
    if logits.dim() != 2:
        raise UnsupportedModelError(f"objective {objective!r} supports classification (logits (batch, classes)); "
                                    f"got logits of shape {tuple(logits.shape)}: use it with a classification task")


# ----- embeddings -------------------------------------------------------------------------------
def embedding_module(model: nn.Module) -> nn.Module:
    module = unwrap(model).get_input_embeddings()
    if module is None:
        raise UnsupportedModelError(f"{type(unwrap(model)).__name__} has no input embeddings to perturb")
    return module


def embedding_shape(model: nn.Module, input_ids: torch.Tensor) -> tuple[int, ...]:
    return (*input_ids.shape, embedding_module(model).weight.shape[-1])


def embedding_output_module(model: nn.Module) -> nn.Module:
    """The embedding layer whose output (word + position + token type, after LayerNorm) the first
    transformer layer reads: ``base_model.embeddings`` (BERT, RoBERTa, ELECTRA, DistilBERT)."""
    module = getattr(unwrap(model).base_model, "embeddings", None)
    if not isinstance(module, nn.Module) or module is embedding_module(model):
        raise UnsupportedModelError(f"{type(unwrap(model)).__name__} has no embedding layer with a LayerNorm "
                                    "(base_model.embeddings) to perturb after")
    return module


@contextlib.contextmanager
def perturbed_embeddings(model: nn.Module, delta: torch.Tensor, after_layer_norm: bool = False):
    """Inside the block, the word-embedding lookup returns ``E[x] + δ`` (a forward hook): the model
    still receives ``input_ids``, so position ids, token types and padding are computed as usual.
    ``after_layer_norm``: δ is added to the whole embedding layer's output instead (SMART's MT-DNN
    code perturbs there)."""
    def hook(_module, _inputs, output):
        return output + delta.to(output.dtype)

    module = embedding_output_module(model) if after_layer_norm else embedding_module(model)
    with HookSet() as hooks:
        hooks.add(module.register_forward_hook(hook))
        yield


# ----- dropout masks ----------------------------------------------------------------------------
def rng_state() -> dict:
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore the random state, so the next forward pass draws the same dropout masks."""
    torch.set_rng_state(state["cpu"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])


# ----- parameters -------------------------------------------------------------------------------
def layer_parameters(model: nn.Module, weights_only: bool = False) -> list[tuple[str, nn.Parameter]]:
    """Trainable parameters inside the transformer layers (no embeddings, pooler or classifier), in
    stack / layer order: the parameters Child-Tuning's and ROSE's reference code select among
    (names containing ``layer``; ROSE: ``layer`` and ``weight``)."""
    out = []
    for stack, layers in get_adapter(unwrap(model)).stacks(unwrap(model)).items():
        for i, layer in enumerate(layers):
            for name, param in layer.named_parameters():
                if param.requires_grad and (not weights_only or name.endswith("weight")):
                    out.append((f"{stack}.{i}.{name}", param))
    if not out:
        raise ConfigError("the model has no trainable parameters inside its transformer layers")
    return out


# ----- the Trainer's backward -------------------------------------------------------------------
def trainer_backward(trainer, loss: torch.Tensor, num_items_in_batch=None) -> torch.Tensor:
    """``loss`` through the Trainer's accelerator backward, scaled exactly as ``Trainer.training_step``
    scales it (multi-GPU mean, gradient-accumulation division, DeepSpeed flag); returns it detached."""
    if trainer.args.n_gpu > 1:
        loss = loss.mean()
    scaled = trainer.loss_is_scaled_for_ga
    if scaled is None:
        scaled = (trainer.model_accepts_loss_kwargs and num_items_in_batch is not None) or \
            trainer.compute_loss_func is not None
    if not scaled:
        loss = loss / trainer.current_gradient_accumulation_steps
    kwargs = {"scale_wrt_gas": False} if trainer.accelerator.distributed_type == DistributedType.DEEPSPEED else {}
    trainer.accelerator.backward(loss, **kwargs)
    return loss.detach()
