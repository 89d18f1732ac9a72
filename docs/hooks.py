"""MkDocs hook: the measured results of ``benchmarks/*_results.md`` become pages under ``results/`` (they live
beside their scripts, outside ``docs/``), so ``benchmarks.md`` links to them and ``mkdocs build --strict`` checks
those links."""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks"


def on_files(files, config):
    for path in sorted(RESULTS.glob("*_results.md")):
        files.append(File.generated(config, f"results/{path.name}", abs_src_path=str(path)))
    return files
