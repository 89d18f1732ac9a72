"""The report card as one self-contained HTML file (``report.html``): the Markdown rendering
converted with markdown-it-py (CommonMark + tables), every plot embedded as a base64 PNG, so the
file can be mailed or attached without its folder."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.2rem .5rem}
td{text-align:right}td:first-child{text-align:left}img{max-width:100%}code{background:#f4f4f4}
h2:first-of-type + ul{background:#fff4e5;border-left:4px solid #e69500;padding:.5rem 2rem}"""


def _embed(match: re.Match, folder: Path) -> str:
    name = html.unescape(match.group(1))
    path = folder / name
    if "/" in name or not path.is_file():
        return match.group(0)
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'src="data:image/png;base64,{data}"'


def render_html(markdown_text: str, folder: str | Path, title: str) -> str:
    """HTML document of ``markdown_text``; images named relative to ``folder`` are embedded."""
    body = MarkdownIt("commonmark").enable("table").render(markdown_text)
    body = re.sub(r'src="([^"]+\.png)"', lambda m: _embed(m, Path(folder)), body)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
