"""The docs name what the package registers (issue 54: the method lists of the README, errors.md and index.md
lacked awq and smoothquant; pages described ``apply`` with ``apply_streamed``'s folder and ``out_dir``; the offline
models page was published with a placeholder). Every registered method, every ``--scheme`` and every public name
of ``forgetless`` is named where a reader looks for it."""
import re
from pathlib import Path

import pytest

import forgetless
from forgetless.registry import METHODS
from forgetless.schemes import SCHEMES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _section(text: str, title: str) -> str:
    """The Markdown section under the heading ``title``, up to the next heading of its level or above."""
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.M)
    assert match, f"no section {title!r}"
    body = text[match.end():]
    end = re.search(rf"^#{{1,{len(match.group(1))}}} ", body, re.M)
    return body[:end.start()] if end else body


@pytest.mark.parametrize("method", METHODS.names())
def test_every_method_is_in_the_method_lists(method):
    readme_list = _section(_text("README.md"), "Methods")
    assert f"`{method}`" in readme_list, f"README.md's Methods list lacks `{method}`"
    assert f"`{method}`" in _text("docs/methods.md"), f"docs/methods.md lacks `{method}`"
    listed = re.search(r"# unknown compression method 'wandaa'; available: (.*?)\. Did you mean", _text("docs/errors.md"),
                       re.S)
    assert listed and method in re.split(r"[,\s#]+", listed.group(1)), f"docs/errors.md's printed list lacks {method}"


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_every_scheme_is_on_the_schemes_page_and_in_the_readme(scheme):
    assert f"`{scheme}`" in _text("docs/quantization-schemes.md") or f"| {scheme} " in _text("docs/quantization-schemes.md")
    assert scheme in _text("README.md"), f"README.md never names --scheme {scheme}"


@pytest.mark.parametrize("name", [n for n in forgetless.__all__ if not n.startswith("_")])
def test_every_public_name_is_in_the_python_pages(name):
    pages = _text("docs/python-api.md") + _text("docs/reference.md")
    assert re.search(rf"\b{re.escape(name)}\b", pages), f"forgetless.{name} is named on neither Python page"


def test_the_overview_points_to_every_llm_page_and_names_every_one_shot_method():
    index = _text("docs/index.md")
    for page in ("llm-quickstart.md", "quantization-schemes.md", "llm-tasks.md", "llm-evaluation.md"):
        assert f"({page})" in index, f"docs/index.md does not point to {page}"
    for name in ("Wanda", "SparseGPT", "GPTQ", "AWQ", "SmoothQuant", "round-to-nearest", "ShortGPT"):
        assert name in index, f"docs/index.md does not name {name}"


def test_apply_is_described_as_apply_and_apply_streamed_as_apply_streamed():
    """``apply`` takes a model object and returns it; a folder and ``out_dir`` are ``apply_streamed``'s."""
    stale = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"forgetless\.apply\((?:[^()]|\([^()]*\))*\)", text):
            if "out_dir" in match.group(0):
                stale.append(f"{page.name}: {match.group(0)[:60]}")
        stale += [f"{page.name}: {m.group(0)}" for m in re.finditer(r"[Gg]ive (`forgetless\.)?`?apply`? (the|its) (model's )?folder", text)]
    assert not stale, stale


def test_no_placeholder_is_published():
    hits = [f"{p.name}:{i}" for p in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"\b(RESULTS_PENDING|TBD|FIXME|TODO)\b|PENDING\b", line)]
    assert not hits, hits
