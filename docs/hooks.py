"""MkDocs hook: the measured results of ``benchmarks/*_results.md`` (beside their scripts, outside
``docs/``) become pages under ``results/``, and the pages' links to them (``../benchmarks/X_results.md``,
which GitHub follows as they are) are pointed there, so ``mkdocs build --strict`` checks them."""
from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks"
LINK = re.compile(r"\]\(\.\./benchmarks/(\w+_results\.md)")


def on_files(files, config):
    for path in sorted(RESULTS.glob("*_results.md")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    if "/" in page.file.src_uri:  # only pages at the top of docs/ link the results
        return markdown
    return LINK.sub(r"](results/\1", markdown)
