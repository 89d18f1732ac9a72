"""MkDocs hook: the measured results of ``benchmarks/*_results.md`` (beside their scripts, outside
``docs/``) become pages under ``results/``. Links are written the way GitHub follows them in the
repository and pointed to where the site has their target, so ``mkdocs build --strict`` checks them:
a page's ``../benchmarks/X_results.md`` becomes ``results/X_results.md``, and a results file's
``../docs/page.md`` becomes ``../page.md``."""
from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks"
LINK = re.compile(r"\]\(\.\./benchmarks/(\w+_results\.md)")  # a page's link to a results file
PAGE_LINK = re.compile(r"\]\(\.\./docs/")  # a results file's link to a page


def on_files(files, config):
    for path in sorted(RESULTS.glob("*_results.md")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith("results/"):
        return PAGE_LINK.sub("](../", markdown)
    if "/" in page.file.src_uri:  # only pages at the top of docs/ link the results
        return markdown
    return LINK.sub(r"](results/\1", markdown)
