"""report.html, compare.html and sweep.html of tiny runs in a real headless Chromium (Debian's
``chromium``; ``.ci/run`` installs it): each page loads, every image decodes (naturalWidth > 0),
nothing is logged as an error, and a full-page screenshot is written under the test's temporary
folder. Driven over the DevTools protocol with no Python dependency (``tests/browser.py``)."""
import json
import os
import struct

import pytest

from browser import CHROMIUM, Browser
from forgetless.cli import main
from typed_cards import typed_card

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"{CHROMIUM} is absent (apt-get install chromium); the browser test skips")


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _sweep_page(two_runs, folder):
    from forgetless.sweep.table import _record, _summary, write_sweep

    cards = [json.loads((run / "report.json").read_text()) for run in two_runs]
    records = [_record(typed_card(card), "ratio") for card in cards]
    records[1]["level"], records[1]["objective"] = 0.4, "rmc"
    setup = {"method": "heads", "method_options": {}, "level_option": "ratio", "student_init": "teacher",
             "seeds": [0], "train": {"epochs": 1}, "teacher_train": {"epochs": 1}}
    write_sweep(_summary(records, {"name": "synthetic", "protocol": "tiny", "train": 64, "sets": {}}, setup, {}, None),
                folder)
    return folder / "sweep.html"


def test_pages_render_in_headless_chromium(two_runs, tmp_path):
    compare = tmp_path / "compare"
    assert main(["compare", *map(str, two_runs), "--out", str(compare)]) == 0
    pages = {"report": two_runs[0] / "report.html", "compare": compare / "compare.html",
             "sweep": _sweep_page(two_runs, tmp_path / "sweep")}
    browser = Browser(tmp_path / "profile")
    try:
        for name, page in pages.items():
            shot = tmp_path / f"{name}.png"
            seen = browser.open(page, shot)
            assert seen["title"].startswith("forgetless"), (name, seen["title"])
            assert seen["images"] and all(image["complete"] and image["width"] > 0 for image in seen["images"]), \
                (name, seen["images"])
            assert seen["errors"] == [], (name, seen["errors"])
            width, height = _png_size(shot)
            assert width >= 1000 and height > 900, (name, width, height)  # the whole page, not one viewport
    finally:
        browser.close()
    assert len(json.loads((two_runs[0] / "report.json").read_text())["plots"]) == 2  # both plots were checked
