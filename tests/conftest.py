"""Shared fixtures: tiny models built from configs (no download) and the bundled tokenizer."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
import torch
import transformers

TESTS = Path(__file__).resolve().parent  # tests/ mirrors the package (tests/<package folder>/), tests/e2e: whole runs
ROOT = TESTS.parent  # the repository
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
transformers.logging.set_verbosity_error()
if os.environ.get("PYTEST_XDIST_WORKER"):  # pytest -n N: one torch thread per worker, N workers share the cores
    torch.set_num_threads(1)


# Full garbage collections. Every Trainer.train() asks for one (accelerate's free_memory), and Python starts others
# as the heap grows; each walks every object the process holds: the imported stack, the collected test items and
# what earlier tests left alive (~0.3-0.5 s a collection at 700k objects, 15% of a pipeline test's time). Objects
# that live on are therefore moved out of the collector's reach (gc.freeze) once collection is done and after
# each test, with the garbage collected first; a frozen object is still freed by reference counting. While the
# test modules are imported (the whole stack: a heap that only grows) no collection runs.
def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):  # collects tests
        gc.disable()


def pytest_addoption(parser):
    parser.addoption("--fail-on-missing", action="store_true", dest="fail_on_missing",
                     help="fail the run when a test was skipped for a missing dependency (CI: tests/ci_skips.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    from ci_skips import fail_on_missing

    fail_on_missing(session)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()
    gc.enable()


def pytest_runtest_logfinish(nodeid, location):
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def report_json_fits_the_shipped_schema():
    """Every ``report.json`` a test writes is checked against the shipped JSON Schema
    (``forgetless/report/report.schema.json``) with jsonschema, independently of the card's own types."""
    import json

    import jsonschema

    from forgetless.report import card
    from forgetless.report.card_types import SCHEMA_FILE

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    write = card.atomic_write_json

    def checked_write(path, data, *args, **kwargs):
        if os.path.basename(path) == "report.json":
            validator.validate(data)
        return write(path, data, *args, **kwargs)

    card.atomic_write_json = checked_write
    yield validator
    card.atomic_write_json = write


@pytest.fixture(autouse=True, scope="session")
def forgetless_cache(tmp_path_factory):
    """Cached teachers go to a tmp folder, never to ~/.cache/forgetless."""
    path = tmp_path_factory.mktemp("forgetless-cache")
    os.environ["FORGETLESS_CACHE"] = str(path)
    return path


def tiny_config(model_type: str, num_labels: int = 3, vocab_size: int = 120):
    if model_type == "bert":
        return transformers.BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                       intermediate_size=37, num_labels=num_labels, initializer_range=0.2)
    if model_type == "roberta":
        return transformers.RobertaConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=3,
                                          num_attention_heads=4, intermediate_size=37, num_labels=num_labels,
                                          pad_token_id=1, initializer_range=0.2)
    if model_type == "distilbert":
        return transformers.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=3, n_heads=4, hidden_dim=37,
                                             num_labels=num_labels, initializer_range=0.2)
    raise ValueError(model_type)


def tiny_classifier(model_type: str = "bert", num_labels: int = 3, seed: int = 0, vocab_size: int = 120):
    torch.manual_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_config(tiny_config(model_type, num_labels, vocab_size))
    return model.eval()


def batch(seed: int = 1, vocab_size: int = 120):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab_size, (3, 11), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 4:] = 0
    return {"input_ids": ids, "attention_mask": mask}


@pytest.fixture(scope="session")
def minilm_tokenizer():
    from forgetless.models.loading import resolve_model_path

    return transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, minilm_tokenizer):
    """A tiny BERT with the bundled WordPiece tokenizer, saved as a plain Hugging Face folder."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_tokenizer, layers=2)


def save_tiny_bert(path, tokenizer, layers: int, intermediate: int = 64, positions: int = 128) -> str:
    """A seeded BERT encoder of hidden size 32 and 4 heads, with ``tokenizer``, saved in ``path``."""
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=layers,
                                     num_attention_heads=4, intermediate_size=intermediate,
                                     max_position_embeddings=positions)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")


@pytest.fixture(scope="session")
def shared_data():
    path = os.path.abspath(SHARED_DATA)
    if not os.path.isdir(path):
        pytest.skip("../shared/data is not present")
    return path


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for the module's tests (tiny models run faster; the machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory, tiny_model_dir):
    """Two finished tiny compress runs of one task (heads, truncate) for the report pages."""
    from forgetless.cli import main

    root = tmp_path_factory.mktemp("two-runs")
    common = ["--model", tiny_model_dir, "--train-size", "64", "--eval-size", "16", "--epochs", "1", "--lr", "1e-3",
              "--bench-repeats", "3", "--bench-seq-len", "16", "--bench-batch-size", "4", "--no-progress"]
    runs = {"heads": ["--method", "heads", "--prune-count", "2", "--scoring-examples", "16"],
            "truncate": ["--method", "truncate", "--layers", "1"]}
    for name, argv in runs.items():
        assert main(["compress", *argv, *common, "--out", str(root / name)]) == 0
    return root / "heads", root / "truncate"


OUTCOMES = ("clear", "correct", "unclear", "traceback", "silent", "destructive")


def pytest_terminal_summary(terminalreporter):
    """The bad-input harness's tally, printed after every run that ran one of its cases (``pytest -n N``
    too): each case of ``test_bad_inputs.py`` / ``test_bad_inputs_llm.py`` records the property
    ``bad_input`` = ``"SURFACE OUTCOME"`` (``llm clear``; the last one recorded counts)."""
    records = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            said = [value for key, value in getattr(report, "user_properties", ()) if key == "bad_input"]
            if said and getattr(report, "when", None) == "call":
                records.append(said[-1].split())  # a case's last word on itself
    if not records:
        return
    counts = {kind: sum(1 for record in records if record[1] == kind) for kind in OUTCOMES}
    llm = sum(1 for record in records if record[0] == "llm")
    terminalreporter.write_line(f"bad-input harness: {len(records)} cases ({llm} on the LLM surfaces): "
                                + ", ".join(f"{kind} {n}" for kind, n in counts.items()))


@pytest.fixture(scope="session")
def llm_files(tmp_path_factory) -> dict:
    """The fixture folder of the LLM-surface bad-input modules (``tests/e2e/test_bad_inputs_llm.py``, ``_schemes``,
    ``_sensitivity``, ``_moe``, ``_report``), built once per test process: its files are only read (a case that
    changed one is judged destructive); ``test_bad_inputs_llm.llm_paths`` under a folder of its own (a finished
    run may sit beside it)."""
    from test_bad_inputs_llm import llm_paths  # tests/e2e: on the path once one of those modules is collected

    return llm_paths(tmp_path_factory.mktemp("bad-llm") / "in")
