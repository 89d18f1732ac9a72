"""The report card as one self-contained HTML file (``report.html``): the Markdown rendering
converted with markdown-it-py (CommonMark + tables), every plot embedded as a base64 PNG, so the
file can be mailed or attached without its folder. Raw HTML is off and the only links are the
folder's own plots: a label, set or folder name holding ``<script>`` or ``javascript:`` is shown as
text, never run."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0;display:block;overflow-x:auto;max-width:100%}th,td{border:1px solid #ccc;padding:.2rem .5rem}
td{text-align:right;white-space:nowrap}td:first-child{text-align:left}td[style*="left"]{white-space:normal}img{max-width:100%}code{background:#f4f4f4}
h2:first-of-type + ul{background:#fff4e5;border-left:4px solid #e69500;padding:.5rem 2rem}
.summary{border:1px solid #d0d7de;border-radius:8px;padding:.8rem 1rem;margin:1rem 0;background:#f6f8fa}
.verdict{font-size:1.15rem;font-weight:600;margin:.2rem 0 .8rem}
.tiles{display:flex;flex-wrap:wrap;gap:.6rem}
.tile{flex:1 1 7.5rem;border-radius:6px;padding:.45rem .6rem;background:#fff;border-left:5px solid #8c959f}
.tile .label{font-size:.8rem;color:#57606a}.tile .value{font-size:1.3rem;font-weight:600}
.tile .detail{font-size:.75rem;color:#57606a}
.good{border-left-color:#1a7f37}.good .value{color:#1a7f37}
.bad{border-left-color:#cf222e}.bad .value{color:#cf222e}
.neutral .value{color:#57606a}
.warnings{background:#fff4e5;border-left:4px solid #e69500;margin:.8rem 0 0;padding:.4rem 1rem .4rem 2rem}"""


def _embed(match: re.Match, folder: Path) -> str:
    name = html.unescape(match.group(1))
    path = folder / name
    if "/" in name or not path.is_file():
        return match.group(0)
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'src="data:image/png;base64,{data}"'


def render_html(markdown_text: str, folder: str | Path, title: str, panel: str = "") -> str:
    """HTML document of ``markdown_text``; images named relative to ``folder`` are embedded.
    ``panel`` (HTML, e.g. ``report.summary.summary_panel``) goes right below the first heading."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # text from users' data stays text
    md.validateLink = lambda url: bool(re.fullmatch(r"[\w.-]+\.png", url))  # only the folder's plots: no javascript:
    body = md.render(markdown_text)
    body = re.sub(r'src="([^"]+\.png)"', lambda m: _embed(m, Path(folder)), body)
    if panel:
        head, found, rest = body.partition("</h1>\n")
        body = head + found + panel + rest if found else panel + body
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")
