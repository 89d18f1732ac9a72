"""Faults (issue 9): a run killed with SIGKILL at checkpoint-write time, during training, during
saving and during evaluation, then rerun in the same output folder, ends with weights and report
numbers identical (sha256) to an uninterrupted run, for a truncate, a magnitude and a nash run on
tiny models. A full disk while a checkpoint is written is a clear error, and a later run resumes.

The killed runs are forked children of the test process (a subprocess without the import cost),
each killed by ``os.kill(pid, SIGKILL)`` from a patched writer / step / evaluation.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.cli import main

COMMON = ["--train-size", "64", "--eval-size", "16", "--epochs", "1", "--batch-size", "8", "--save-steps", "2",
          "--bench-repeats", "1", "--bench-seq-len", "16", "--bench-batch-size", "2", "--threads", "1",
          "--no-progress", "--seed", "3"]
RUNS = {
    "truncate": ["compress", "--model", "tiny-bert", "--method", "truncate", "--layers", "1", "--lr", "1e-3"],
    "magnitude": ["compress", "--model", "tiny-bert", "--method", "magnitude", "--sparsity", "0.5",
                  "--prune-every", "3", "--lr", "1e-3"],
    "nash": ["compress", "--model", "tiny-t5", "--task", "synthetic-lookup", "--method", "nash",
             "--decoder-layers", "2", "--finetune-epochs", "1", "--max-length", "32", "--lr", "1e-3",
             "--max-new-tokens", "8"],
}
# kills in order, each in a new process on the same output folder: (moment, n-th occurrence);
# checkpoints and steps count those of the compressed model only (the teacher is trained once and cached)
CHAIN = [("checkpoint", 2), ("step", 2), ("save", 1), ("evaluate", 2)]


def _kill_at(moment: str, nth: int) -> None:
    """Patch the writer / step / evaluation of ``moment`` so that its ``nth`` call kills the process."""
    from forgetless.kinds.classifier import ClassifierKind
    from forgetless.kinds.seq2seq import Seq2SeqKind
    from forgetless.models import io
    from forgetless.training.trainer import ForgetlessTrainer

    count = [0]

    def hit():
        count[0] += 1
        if count[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)

    def before(owner, name):
        original = getattr(owner, name)

        def patched(self, *args, **kwargs):
            trainer_dir = str(getattr(getattr(self, "args", None), "output_dir", ""))
            if "teacher" not in trainer_dir:  # the teacher's training is not counted
                hit()
            return original(self, *args, **kwargs)
        setattr(owner, name, patched)

    if moment == "checkpoint":  # weights are written, optimizer / scheduler / state not yet
        before(transformers.Trainer, "_save_optimizer_and_scheduler")
    elif moment == "step":
        before(ForgetlessTrainer, "training_step")
    elif moment == "evaluate":
        before(ClassifierKind, "evaluate")
        before(Seq2SeqKind, "evaluate")
    elif moment == "save":  # inside save_model: weights written to the temporary folder, not renamed yet
        original = io.save_weights

        def save_then_die(*args, **kwargs):
            original(*args, **kwargs)
            hit()
        io.save_weights = save_then_die
    else:
        raise ValueError(moment)


def killed_run(argv: list[str], moment: str, nth: int, log: Path) -> None:
    """Run ``argv`` in a forked child that is SIGKILLed at ``moment``; assert it died that way
    (the child's output goes to ``log``)."""
    sys.stdout.flush(), sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(handle, 1), os.dup2(handle, 2)
            sys.stdout = sys.stderr = open(log, "a", buffering=1)  # pytest's capture objects stay behind
            _kill_at(moment, nth)
            code = main(argv)
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
        f"{moment}:{nth} never happened (exit status {status}): {log.read_text()[-1500:]}"


def weights_sha256(path: Path) -> str:
    """sha256 over every saved tensor (name, dtype, shape, bytes; sorted by name) and the tied-weight
    map. (The file's own bytes are not used: safetensors writes the tied-weight map in set order,
    which differs between runs of the same process.)"""
    from safetensors import safe_open

    digest = hashlib.sha256()
    with safe_open(str(path), "pt") as handle:
        digest.update(json.dumps(sorted((handle.metadata() or {}).items())).encode())
        for name in sorted(handle.keys()):
            tensor = handle.get_tensor(name).contiguous()
            digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
            digest.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def fingerprint(out: Path) -> tuple[str, dict]:
    """sha256 of the saved weights, and the report's numbers per set (timings aside)."""
    digest = weights_sha256(out / "model" / "model.safetensors")
    card = json.loads((out / "report.json").read_text())
    return digest, {"sets": card["sets"], "params": card["params"]["compressed"]["total"]}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A teacher cache of this test only: the straight run trains (and caches) the teacher."""
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("method", list(RUNS))
def test_killed_four_times_then_identical(method, tmp_path):
    torch.set_num_threads(1)
    argv = RUNS[method] + COMMON
    assert main([*argv, "--out", str(tmp_path / "straight")]) == 0
    out = tmp_path / "interrupted"
    for moment, nth in CHAIN:
        killed_run([*argv, "--out", str(out)], moment, nth, tmp_path / f"killed-{moment}.log")
        assert not (out / "report.json").exists()  # nothing looks complete while it is not
    assert main([*argv, "--out", str(out)]) == 0
    assert fingerprint(out) == fingerprint(tmp_path / "straight")
    assert not list(out.glob("work/*.stale-*"))  # resumed, never set aside as another run


def test_disk_full_during_a_checkpoint_then_resume(tmp_path, monkeypatch, capsys):
    """A checkpoint write that fails with ENOSPC is one clear error (path, free space); the
    half-written checkpoint is skipped on the rerun, which resumes and matches a straight run."""
    torch.set_num_threads(1)
    argv = RUNS["truncate"] + COMMON
    assert main([*argv, "--out", str(tmp_path / "straight")]) == 0
    calls = [0]
    original = transformers.Trainer._save_optimizer_and_scheduler

    def full_disk(self, output_dir):
        calls[0] += "teacher" not in str(output_dir)
        if calls[0] == 2:  # the compressed model's second checkpoint
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, output_dir)

    monkeypatch.setattr(transformers.Trainer, "_save_optimizer_and_scheduler", full_disk)
    capsys.readouterr()
    out = tmp_path / "full"
    assert main([*argv, "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == 1 and "disk full while training into" in err[0] and "MiB free" in err[0], err
    assert str(out / "work" / "train-truncate") in err[0]
    monkeypatch.setattr(transformers.Trainer, "_save_optimizer_and_scheduler", original)
    assert main([*argv, "--out", str(out)]) == 0
    assert "skipping incomplete checkpoint" in capsys.readouterr().err
    assert fingerprint(out) == fingerprint(tmp_path / "straight")


def test_incomplete_checkpoints_are_skipped_with_a_message(tmp_path, capsys):
    """0-byte files, a missing trainer_state.json or a missing completion mark: the newest
    complete checkpoint is used and the incomplete ones are removed with a message."""
    from forgetless.training.trainer import COMPLETE_FILE, last_complete_checkpoint

    def checkpoint(step, mark=True, state=True):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        if state:
            (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        if mark:
            (folder / COMPLETE_FILE).write_text(f"{step}\n")
        return folder

    checkpoint(2)
    checkpoint(4, state=False)
    (checkpoint(6, mark=False) / "optimizer.pt").write_bytes(b"")
    (checkpoint(8) / "trainer_state.json").write_bytes(b"")  # 0-byte state: unreadable
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2"]
    err = capsys.readouterr().err
    assert all(f"skipping incomplete checkpoint {tmp_path / f'checkpoint-{n}'}" in err for n in (4, 6, 8))
    assert last_complete_checkpoint(tmp_path / "checkpoint-2") is None
