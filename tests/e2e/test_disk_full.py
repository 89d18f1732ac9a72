"""A full disk at every write site of a run (issue 18) is one ``DiskFullError`` line naming the
folder and its free space, exit code 2, and the same command afterwards resumes to the weights
and numbers of an uninterrupted run, leaving no temporary folders behind. The writers are patched
to fail as the libraries do: ``OSError(ENOSPC)``, safetensors' ``SafetensorError`` (no errno, a
message) and torch's ``RuntimeError`` from its zip writer; and on a real small file system (a
tmpfs filled at each write site, where this process may mount one) torch's "unexpected pos" short
write. Also: the cache folder is checked before a teacher is trained, and two processes on one
output folder or one teacher."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.cli import main

from test_faults import COMMON, RUNS, fingerprint

ARGV = RUNS["truncate"] + COMMON


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if "error:" in line]


def test_disk_full_at_every_write_site_then_resume(tmp_path, monkeypatch, capsys):
    from safetensors import SafetensorError

    from forgetless.models import io
    from forgetless.report import card

    torch.set_num_threads(1)
    cache = tmp_path / "cache"
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "straight-cache"))
    assert main([*ARGV, "--out", str(tmp_path / "straight")]) == 0
    monkeypatch.setenv("FORGETLESS_CACHE", str(cache))
    out = tmp_path / "full"
    save_weights, checkpoint = io.save_weights, transformers.Trainer._save_optimizer_and_scheduler
    write_card = card.atomic_write_json

    def cache_full(model, folder):  # the teacher's save into the cache: safetensors' own error
        if str(cache) in str(folder):
            raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                                  'message: "No space left on device" })')
        return save_weights(model, folder)

    def checkpoint_full(self, output_dir):  # torch's zip writer hides the errno
        if "teacher" in str(output_dir):
            return checkpoint(self, output_dir)
        raise RuntimeError("[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file "
                           "data/0: file write failed")

    def model_full(model, folder):
        raise OSError(errno.ENOSPC, "No space left on device")

    def report_full(path, data):
        if Path(path).name == "report.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return write_card(path, data)

    sites = [("cache", io, "save_weights", cache_full, str(cache / "teachers")),
             ("checkpoint", transformers.Trainer, "_save_optimizer_and_scheduler", checkpoint_full,
              str(out / "work" / "train-truncate")),
             ("model", io, "save_weights", model_full, str(out)),
             ("report", card, "atomic_write_json", report_full, str(out))]
    for site, owner, name, patched, folder in sites:
        with monkeypatch.context() as patch:
            patch.setattr(owner, name, patched)
            capsys.readouterr()
            assert main([*ARGV, "--out", str(out)]) == 2, site
            lines = error_lines(capsys)
            assert len(lines) == 1, (site, lines)
            assert re.search(rf"disk full while (writing into|training into) {re.escape(folder)} \([0-9.]+ MiB free\)",
                             lines[0]), (site, lines[0])
            assert not (out / "report.json").exists()
        assert not list(out.glob(".*.tmp-*")) and not list((cache / "teachers").glob(".*.tmp-*")), site
    key = next(p.name for p in (cache / "teachers").iterdir() if p.is_dir())
    (out / ".model.tmp-killed").mkdir()  # what a kill while saving leaves (issue 18: 6 of 6 kills)
    (out / ".model.tmp-killed" / "model.safetensors").write_bytes(b"")
    (cache / "teachers" / f".{key}.tmp-killed").mkdir()
    assert main([*ARGV, "--out", str(out)]) == 0
    assert fingerprint(out) == fingerprint(tmp_path / "straight")
    assert not list(out.rglob("*.tmp-*")) and not list(cache.rglob("*.tmp-*"))


def test_leftovers_of_a_killed_save_are_removed_by_the_next_run(tmp_path):
    """``.model.tmp-*`` in OUT and ``.<key>.tmp-*`` in the cache (what a kill while saving leaves)."""
    from forgetless.fsutil import remove_leftovers

    (tmp_path / ".model.tmp-abc").mkdir()
    (tmp_path / ".model.tmp-abc" / "model.safetensors").write_bytes(b"")
    (tmp_path / ".report.json.tmp-x").write_text("{")
    (tmp_path / "user.tmp-1").write_text("not ours")  # not a forgetless temporary name: kept
    assert remove_leftovers(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user.tmp-1"]
    (tmp_path / ".k.tmp-1").mkdir()
    assert remove_leftovers(tmp_path, min_age_s=3600) == 0  # too young: a running writer's


@pytest.mark.parametrize("setup, pattern", [
    ("file", r"FORGETLESS_CACHE=.*cache-file: is a file; point it to a folder"),
    ("inside-file", r"FORGETLESS_CACHE=.*cache-file/sub: is inside the file .*cache-file"),
    ("read-only", r"FORGETLESS_CACHE=/proc/forgetless-cache: cannot write in /proc"),  # read-only even for root
])
def test_cache_folder_checked_before_the_teacher_is_trained(setup, pattern, tmp_path, monkeypatch, capsys):
    (tmp_path / "cache-file").write_text("x")
    cache = {"file": tmp_path / "cache-file", "inside-file": tmp_path / "cache-file" / "sub",
             "read-only": Path("/proc/forgetless-cache")}[setup]
    monkeypatch.setenv("FORGETLESS_CACHE", str(cache))
    out = tmp_path / "out"
    code = main([*ARGV, "--out", str(out)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert code == 2 and len(lines) == 1 and re.search(pattern, lines[0]), err
    assert "[forgetless]" not in err and not out.exists()


# ----- two processes ---------------------------------------------------------------------------------------
def _start(argv, tmp_path, cache, name):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "HF_HUB_OFFLINE": "1",
           "FORGETLESS_CACHE": str(cache)}
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen([sys.executable, "-m", "forgetless", *argv], stdout=log, stderr=subprocess.STDOUT,
                            env=env), tmp_path / f"{name}.log"


@pytest.mark.slow
def test_second_run_on_the_same_folder_stops_clearly(tmp_path, monkeypatch, capsys):
    """~25 s on 2 shared cores: one run in a child process, the second in this process."""
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    first, log = _start([*ARGV, "--epochs", "4", "--out", str(out)], tmp_path, cache, "first")
    deadline = time.time() + 240
    while "] teacher" not in log.read_text() and first.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert first.poll() is None, log.read_text()
    monkeypatch.setenv("FORGETLESS_CACHE", str(cache))
    assert main([*ARGV, "--epochs", "4", "--out", str(out)]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and "another forgetless run is writing into it" in lines[0], lines
    assert first.wait(timeout=600) == 0, log.read_text()
    assert (out / "report.json").is_file()


@pytest.mark.slow
def test_two_runs_needing_one_teacher_train_it_once(tmp_path):
    """~40 s on 2 shared cores: two processes, two output folders, one cached teacher."""
    cache = tmp_path / "cache"
    runs = [_start([*ARGV, "--out", str(tmp_path / name)], tmp_path, cache, name) for name in ("a", "b")]
    for process, log in runs:
        assert process.wait(timeout=600) == 0, log.read_text()
    logs = [log.read_text() for _, log in runs]
    assert sum("fine-tuning the teacher" in text for text in logs) == 1, logs
    assert sum("reusing teacher from" in text for text in logs) == 1, logs
    assert len(list((cache / "teachers").iterdir())) == 2  # the teacher and its lock file
    cards = [json.loads((tmp_path / name / "report.json").read_text()) for name in ("a", "b")]
    assert cards[0]["sets"] == cards[1]["sets"]



# ----- a real small file system ----------------------------------------------------------------------------
def test_torch_short_write_on_a_small_file_system_is_a_full_disk():
    """On a small file system torch's zip writer does not say "No space left": it finds the short
    write afterwards ("unexpected pos"), raised while handling a C++ stream error; other enforce
    failures of the writer are not a full disk."""
    from forgetless.fsutil import is_disk_full

    try:
        try:
            raise RuntimeError("basic_ios::clear: iostream error")
        except RuntimeError:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 9664 vs 9556")
    except RuntimeError as exc:
        assert is_disk_full(exc)
    assert not is_disk_full(RuntimeError("[enforce fail at inline_container.cc:439] . Parent directory /x does "
                                         "not exist."))


@pytest.fixture
def small_file_system(tmp_path):
    """A 48 MiB tmpfs (the real short writes of a full disk); skipped where this process may not mount."""
    folder = tmp_path / "small-fs"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root): test_torch_short_write_on_a_small_file_system_is_a_"
                    "full_disk and the simulated writers above cover the messages")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path, leave: int) -> Path:
    """A file taking all but ``leave`` bytes of the file system of ``folder``."""
    filler = folder / "filler"
    size = max(0, shutil.disk_usage(folder).free - leave)
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, size) if size else None
    return filler


def test_full_small_file_system_at_every_write_site_then_resume(small_file_system, tmp_path, monkeypatch, capsys):
    """Each write of a run (a training checkpoint: torch's zip writer and safetensors; the model
    folder; predictions, plot, pages, card, model card) on a real file system that fills up there is
    the one disk-full line, exit code 2; with the space back the same command finishes, with the
    numbers of a run that had room."""
    from forgetless import pipeline
    from forgetless.data.tasks import load_task
    from forgetless.models.io import save_model
    from forgetless.models.loading import bundled_tokenizer
    from forgetless.models.tiny import tiny_classifier

    torch.set_num_threads(1)
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    tokenizer = bundled_tokenizer()
    labels = load_task("synthetic", train_size=8).label_names
    teacher = save_model(tiny_classifier("tiny-bert", len(tokenizer), labels, seed=1), tmp_path / "teacher", tokenizer)
    argv = ["compress", *COMMON, "--model", "tiny-bert", "--teacher", str(teacher), "--method", "truncate",
            "--layers", "1", "--recovery", "none"]
    assert main([*argv, "--out", str(tmp_path / "straight")]) == 0
    written = [tmp_path / "straight" / "model", *(tmp_path / "straight" / name for name in (
        "predictions.jsonl", "metrics.png", "report.md", "report.html", "report.json"))]  # in the order written
    pages = lambda size: -(-size // 4096) * 4096  # noqa: E731 - what a file takes on a tmpfs
    sizes = [sum(pages(f.stat().st_size) for f in p.iterdir() if f.name not in ("README.md", "recipe.yaml"))
             if p.is_dir() else pages(p.stat().st_size) for p in written]  # the model card and recipe come later
    out = small_file_system / "run"
    save_run = pipeline.save_run
    for site, size in enumerate(sizes):
        shutil.rmtree(out, ignore_errors=True)
        leave = sum(sizes[:site]) + size - 4096  # room for what comes before, not for all of this file
        monkeypatch.setattr(pipeline, "save_run", lambda *a, leave=leave, **k: (_fill(small_file_system, leave),
                                                                                 save_run(*a, **k))[1])
        capsys.readouterr()
        assert main([*argv, "--out", str(out)]) == 2, written[site].name
        lines = error_lines(capsys)
        assert len(lines) == 1 and re.search(rf"disk full while writing into {re.escape(str(out))}", lines[0]), lines
        assert [(out / p.name).exists() for p in written] == [True] * site + [False] * (len(written) - site)
        (small_file_system / "filler").unlink()
    monkeypatch.setattr(pipeline, "save_run", save_run)

    checkpoint = transformers.Trainer._save_optimizer_and_scheduler  # torch.save of the optimizer state

    def full_checkpoint(self, output_dir):
        _fill(small_file_system, 4096)
        return checkpoint(self, output_dir)

    trained = [a for a in argv if a not in ("--recovery", "none")]
    monkeypatch.setattr(transformers.Trainer, "_save_optimizer_and_scheduler", full_checkpoint)
    assert main([*trained, "--out", str(out), "--overwrite"]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and re.search(r"disk full while training into .*run/work/train-truncate", lines[0]), lines
    (small_file_system / "filler").unlink()
    monkeypatch.setattr(transformers.Trainer, "_save_optimizer_and_scheduler", checkpoint)
    assert main([*argv, "--out", str(out), "--overwrite"]) == 0
    assert fingerprint(out) == fingerprint(tmp_path / "straight")
    assert not list(out.rglob("*.tmp-*"))
