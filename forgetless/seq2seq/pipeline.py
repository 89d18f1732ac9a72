"""End-to-end seq2seq runs, callable from Python and wired to the CLI:

* ``train_teacher``: fine-tune a seq2seq model on a task and save it (the NASH teacher).
* ``run_compress``: teacher → NASH or CoFi-style pruning with distillation (Ko et al. §4) →
  finalize (physical removal; checked: greedy generation of the sliced model equals the masked
  model's) → fine-tune → save → evaluate → generation speed of teacher vs compressed in the same
  run → report card (JSON + Markdown).
* ``run_profile``: per-layer time vs sequence length for several head / FFN widths and the
  encoder vs decoder share of generation time (§3, Finding 3.1, Figure 3).

Every stage writes atomically; a rerun with the same output folder reuses the saved teacher and
resumes training from the last checkpoint.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from ..errors import ConfigError
from ..fsutil import atomic_write_json
from ..models import io
from ..models.adapters import get_adapter
from . import speed as speedlib
from .data import load_task
from .evaluate import evaluate_task, generate_texts
from .models import build_model
from .nash import RECIPES
from .report import write_report
from .trainer import Seq2SeqTrainConfig, train_seq2seq


def _train_config(epochs, batch_size, learning_rate, max_source_length, max_target_length, seed, progress,
                  freeze_embeddings=False):
    return Seq2SeqTrainConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                              max_source_length=max_source_length, max_target_length=max_target_length,
                              seed=seed, progress=progress, freeze_embeddings=freeze_embeddings)


def _layers(model) -> dict:
    return {name: len(layers) for name, layers in get_adapter(model).stacks(model).items()}


def _gen_kwargs(batch_size, max_source_length, max_new_tokens, num_beams) -> dict:
    return dict(batch_size=batch_size, max_source_length=max_source_length, max_new_tokens=max_new_tokens,
                num_beams=num_beams)


def train_teacher(model: str = "minilm", task: str = "synthetic", output_dir: str | Path = "runs/teacher",
                  data_dir=None, epochs: float = 3.0, n_train: int | None = None, n_dev: int | None = None,
                  batch_size: int = 16, learning_rate: float = 5e-5, max_source_length: int = 128,
                  max_target_length: int = 32, max_new_tokens: int = 32, seed: int = 0, progress: bool = False,
                  freeze_embeddings: bool = False, task_obj=None):
    """Fine-tune ``model`` on ``task`` and save it to ``output_dir`` (reused if already there).
    Returns ``(model, tokenizer, task)``."""
    output_dir = Path(output_dir)
    task = task_obj or load_task(task, data_dir, n_train, n_dev, seed)
    if io.is_forgetless_folder(output_dir):
        teacher, tokenizer = io.load_model(output_dir)
        return teacher, tokenizer, task
    base, tokenizer = build_model(model, task.tokenizer, max_new_tokens)
    config = _train_config(epochs, batch_size, learning_rate, max_source_length, max_target_length, seed, progress,
                           freeze_embeddings)
    teacher = train_seq2seq(base, tokenizer, task.train, output_dir.parent / f".{output_dir.name}-work", config)
    io.save_model(teacher, output_dir, tokenizer, metadata={"task": task.name, "protocol": task.protocol,
                                                             "train_examples": len(task.train), "epochs": epochs})
    return teacher, tokenizer, task


def run_compress(method: str = "nash", model: str = "minilm", teacher: str | None = None, task: str = "synthetic",
                 output_dir: str | Path = "runs/nash", data_dir=None, n_train: int | None = None,
                 n_dev: int | None = None, eval_sets: tuple[str, ...] = (), seed: int = 0,
                 teacher_epochs: float = 3.0, prune_epochs: float = 1.0, finetune_epochs: float = 1.0,
                 batch_size: int = 16, learning_rate: float = 5e-5, max_source_length: int = 128,
                 max_target_length: int = 32, max_new_tokens: int = 32, eval_beams: int = 1,
                 decoder_layers: int = 3, decoder_selection: str = "uniform", encoder_pruning: str = "l0",
                 encoder_sparsity: float = 0.3, sparsity: float = 0.5, lambda_enc: float = 0.001,
                 lambda_dec: float = 0.001, kd_temperature: float = 1.0, kd_direction: str = "forward",
                 l0_learning_rate: float = 0.01, init_droprate: float = 0.5, sparsity_warmup: float = 0.5,
                 speed_batch_size: int = 8, speed_beams: int = 1, speed_new_tokens: int = 16, speed_repeats: int = 5,
                 teacher_eval: dict | None = None, progress: bool = False, threads: int | None = None,
                 freeze_embeddings: bool = False) -> dict:
    """Compress with ``method`` (``nash`` or ``cofi``) and write model + report to ``output_dir``.
    ``threads``: torch CPU threads (1 is much faster for tiny models on a shared machine)."""
    if threads:
        torch.set_num_threads(threads)
    if method not in RECIPES:
        raise ConfigError(f"unknown seq2seq method {method!r}; choose from {', '.join(RECIPES)}")
    output_dir = Path(output_dir)
    started = time.time()
    task_obj = load_task(task, data_dir, n_train, n_dev, seed, tuple(eval_sets))
    teacher_dir = Path(teacher) if teacher else output_dir / "teacher"
    teacher_model, tokenizer, task_obj = train_teacher(model, task, teacher_dir, data_dir, teacher_epochs,
                                                       batch_size=batch_size, learning_rate=learning_rate,
                                                       max_source_length=max_source_length,
                                                       max_target_length=max_target_length,
                                                       max_new_tokens=max_new_tokens, seed=seed, progress=progress,
                                                       freeze_embeddings=freeze_embeddings, task_obj=task_obj)
    recipe_cls, config_cls = RECIPES[method]
    common = dict(lambda_enc=lambda_enc, lambda_dec=lambda_dec, kd_temperature=kd_temperature,
                  kd_direction=kd_direction, l0_learning_rate=l0_learning_rate, init_droprate=init_droprate,
                  sparsity_warmup=sparsity_warmup, prune_epochs=prune_epochs, finetune_epochs=finetune_epochs)
    if method == "nash":
        config = config_cls(decoder_layers=decoder_layers, decoder_selection=decoder_selection,
                            encoder_pruning=encoder_pruning, encoder_sparsity=encoder_sparsity, **common)
    else:
        config = config_cls(sparsity=sparsity, **common)
    recipe = recipe_cls(config)
    train_cfg = lambda epochs: _train_config(epochs, batch_size, learning_rate, max_source_length,  # noqa: E731
                                             max_target_length, seed, progress, freeze_embeddings)
    student = recipe.prepare(teacher_model)
    steps = math.ceil(len(task_obj.train) / batch_size) * prune_epochs
    student = train_seq2seq(student, tokenizer, task_obj.train, output_dir / "work" / "prune", train_cfg(prune_epochs),
                            teacher=teacher_model, spec=recipe.spec(int(steps)))
    probe = task_obj.dev.sources[:8]
    gen = _gen_kwargs(8, max_source_length, max_new_tokens, 1)
    masked_out = generate_texts(student, tokenizer, probe, **gen)
    student = recipe.finalize(student)
    sliced_out = generate_texts(student, tokenizer, probe, **gen)
    if finetune_epochs > 0:
        student = train_seq2seq(student, tokenizer, task_obj.train, output_dir / "work" / "finetune",
                                train_cfg(finetune_epochs), teacher=teacher_model, spec=recipe.spec(0, False))
    io.save_model(student, output_dir / "model", tokenizer,
                  metadata={"method": method, "config": vars(config), "task": task_obj.name})
    gen_eval = _gen_kwargs(32, max_source_length, max_new_tokens, eval_beams)
    if teacher_eval is None:
        teacher_eval = evaluate_task(teacher_model, tokenizer, task_obj, **gen_eval)
    student_eval = evaluate_task(student, tokenizer, task_obj, **gen_eval)
    timing = speedlib.compare_generation({"teacher": teacher_model, method: student}, tokenizer, task_obj.dev.sources,
                                         batch_size=speed_batch_size, num_beams=speed_beams,
                                         max_new_tokens=speed_new_tokens, max_source_length=max_source_length,
                                         repeats=speed_repeats)
    report = {
        "task": task_obj.name, "protocol": task_obj.protocol, "method": method, "config": vars(config),
        "train_examples": len(task_obj.train), "dev_examples": len(task_obj.dev),
        "models": {
            "teacher": {"params": teacher_model.num_parameters(), "layers": _layers(teacher_model),
                        "eval": teacher_eval, "latency": timing["seconds"]["teacher"], "speedup": 1.0},
            method: {"params": student.num_parameters(), "layers": _layers(student), "eval": student_eval,
                     "latency": timing["seconds"][method], "speedup": timing["speedup"][method],
                     "kept_layers": recipe.layers, "sparsity": getattr(recipe, "achieved_sparsity", None)},
        },
        "speed": timing,
        "masked_equals_sliced": masked_out == sliced_out,
        "seconds": time.time() - started,
        "notes": [f"{method}: decoder layers kept {recipe.layers.get('decoder')}, "
                  f"target sparsity {recipe.target:.2f}, achieved {getattr(recipe, 'achieved_sparsity', 0.0) or 0.0:.3f}",
                  f"greedy generation masked == sliced on {len(probe)} dev sources: {masked_out == sliced_out}"],
    }
    write_report(report, output_dir)
    return report


def run_profile(model: str = "minilm", output_dir: str | Path = "runs/profile", compressed: str | None = None,
                seq_lengths=(16, 32, 64, 128, 256), head_fractions=(1.0, 0.5, 0.25), ffn_fractions=(1.0, 0.5, 0.25),
                batch_size: int = 8, num_beams: int = 1, max_new_tokens: int = 16, source_length: int = 64,
                repeats: int = 3, threads: int | None = None) -> dict:
    """Figure 3 / Finding 3.1 shape: layer time vs length by width; encoder vs decoder share."""
    if threads:
        torch.set_num_threads(threads)
    base, tokenizer = build_model(model, None, max_new_tokens)
    base.eval()
    sources = [" ".join(["word"] * source_length)]
    result = {"model": model, "threads": torch.get_num_threads(),
              "layer_profile": speedlib.layer_profile(base, seq_lengths, head_fractions, ffn_fractions,
                                                      batch_size, repeats),
              "generation_share": {"base": speedlib.stack_share(base, tokenizer, sources, batch_size, num_beams,
                                                                max_new_tokens, source_length + 2, repeats)}}
    if compressed:
        small, small_tok = io.load_model(compressed)
        result["generation_share"]["compressed"] = speedlib.stack_share(
            small, small_tok or tokenizer, sources, batch_size, num_beams, max_new_tokens, source_length + 2, repeats)
    atomic_write_json(Path(output_dir) / "profile.json", result)
    return result
