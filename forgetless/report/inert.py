"""Markdown whose text from users' data stays text where the Markdown is rendered with raw HTML on:
GitHub shows ``report.md``, the Hugging Face hub shows ``model/README.md`` (what ``--push-to-hub``
uploads). ``report.html`` and ``compare.html`` are rendered with raw HTML off (``report/html.py``);
the Markdown files are read by other renderers, so a set, label, task or folder name holding
``<script>`` or a link must be neutralised in the text itself.

CommonMark (https://spec.commonmark.org, sections 4.6 HTML blocks, 6.4 autolinks, 6.6 raw HTML, 6.3
links, 4.7 link reference definitions) starts every tag and autolink with ``<`` and every link or
image with ``](`` or a ``[label]:`` definition. Outside code spans and fenced code blocks (whose
content a renderer shows verbatim) ``inert`` writes such a ``<`` as ``&lt;`` and breaks ``](`` and ``]:``
with a backslash escape; the text reads the same once rendered. Code spans are trusted only where a
renderer must pair the backticks as ``inert`` does: in a paragraph (lines up to a blank one) where
every backtick string closes on its own line and none is backslash-escaped; elsewhere the code spans
are escaped too (shown with ``&lt;``, never live). Lines forgetless writes itself with a link (the
plots beside the page, the base model's hub page) are passed as ``keep``.
"""
from __future__ import annotations

import re

CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")  # a backtick string closed by one of the same length
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
PLOT = re.compile(r"!\[([\w.-]+\.png)\]\(\1\)")     # a plot of the page's own folder


def inert(markdown: str, keep: tuple[str, ...] = ()) -> str:
    """``markdown`` with no live tag, autolink, link or image but the lines in ``keep`` and the
    page's own plots (module docstring)."""
    out, block, fence = [], [], None
    for line in markdown.split("\n"):
        opening = FENCE.match(line)
        if fence is None and not opening and line.strip():
            block.append(line)
            continue
        out += _block(block, keep)
        block = []
        if fence is not None and opening and opening.group(1).startswith(fence):
            fence = None
        elif fence is None and opening:
            fence = opening.group(1)[0] * len(opening.group(1))
        out.append(line)
    return "\n".join(out + _block(block, keep))


def _block(lines: list[str], keep: tuple[str, ...]) -> list[str]:
    """A paragraph's lines (no blank line, no fence): code spans left as they are where each line's
    backticks pair on that line (``_spans``), else everything escaped."""
    spans = [_spans(line) for line in lines]
    trusted = all(found is not None for found in spans)
    out = []
    for line, found in zip(lines, spans):
        if line in keep or PLOT.fullmatch(line):
            out.append(line)
            continue
        parts, position = [], 0
        for start, end in (found if trusted else []):
            parts += [_text(line[position:start]), line[start:end]]
            position = end
        out.append("".join(parts + [_text(line[position:])]))
    return out


def _spans(line: str) -> list[tuple[int, int]] | None:
    """The code spans of ``line``, or None when a backtick string is left unpaired or escaped."""
    if "\\`" in line:
        return None
    found = [(m.start(), m.end()) for m in CODE_SPAN.finditer(line)]
    rest = "".join(line[a:b] for a, b in zip([0] + [e for _, e in found], [s for s, _ in found] + [len(line)]))
    return None if "`" in rest else found


def _text(text: str) -> str:
    """A tag, comment, declaration or autolink starts ``<`` + a letter, ``/``, ``!`` or ``?``: that ``<``
    becomes ``&lt;`` (``p < 0.001`` stays as written)."""
    return TAG_START.sub("&lt;", text).replace("](", "]\\(").replace("]:", "]\\:")
