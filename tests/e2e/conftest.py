"""The LLM-surface bad-input modules (``test_bad_inputs_llm.py``, ``_schemes``, ``_sensitivity``, ``_moe``,
``_report``) share one fixture folder per test process: its files are only read (a case that changed one would be
judged destructive), so building it once saves a tiny model folder set per module."""
import pytest


@pytest.fixture(scope="session")
def llm_files(tmp_path_factory) -> dict:
    """``test_bad_inputs_llm.llm_paths`` under a folder of its own (a finished run may sit beside it)."""
    from test_bad_inputs_llm import llm_paths

    return llm_paths(tmp_path_factory.mktemp("bad-llm") / "in")
