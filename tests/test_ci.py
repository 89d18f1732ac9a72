"""``.ci/run`` can fail (issue 54): under ``set -e`` bash ignores a failing command that is not the last of an
``a && b && c`` list, so a check written inside one (the docs build was) passes CI whatever it gives."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"


def _commands(text: str) -> list[str]:
    """The script's command lines, continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_every_ci_step_can_fail():
    """A line with ``&&`` only where its failure is handled on purpose (``(…) || echo …``: an optional step)."""
    lists = [line for line in _commands(CI.read_text()) if "&&" in line and not re.search(r"\)\s*[^|]*\|\|", line)]
    assert not lists, f"an `a && b` list in .ci/run hides a failing check from set -e: {lists}"


def _docs_step(folder: Path, link: str) -> subprocess.CompletedProcess:
    """The docs lines of ``.ci/run``, run as the script runs them (``set -euo pipefail``), on a one-page site in
    ``folder`` whose page links ``link``; ``REACHED-THE-TESTS`` is printed only if the script goes on."""
    lines = CI.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("site="))
    end = next(i for i, line in enumerate(lines) if "pytest" in line)
    (folder / "docs").mkdir()
    (folder / "docs" / "index.md").write_text(f"# A page\n\n[another page]({link})\n")
    (folder / "docs" / "other.md").write_text("# Another page\n")
    (folder / "mkdocs.yml").write_text("site_name: t\nnav:\n  - index.md\n  - other.md\n")
    script = "set -euo pipefail\n" + "\n".join(lines[start:end]) + "\necho REACHED-THE-TESTS\n"
    return subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True, timeout=120)


def test_the_docs_step_fails_ci_when_the_build_fails(tmp_path):
    """The real build with the flags of ``.ci/run``: a broken link stops the script before the test command (it did
    not: ``--quiet`` hid the warning ``--strict`` counts, and the ``&&`` list hid the failure), a good one does not."""
    pytest.importorskip("mkdocs")
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    broken, fine = _docs_step(tmp_path / "bad", "no-such-page.md"), _docs_step(tmp_path / "good", "other.md")
    assert broken.returncode != 0 and "REACHED-THE-TESTS" not in broken.stdout, (broken.returncode, broken.stderr[-500:])
    assert "no-such-page.md" in broken.stderr, broken.stderr[-500:]
    assert fine.returncode == 0 and "REACHED-THE-TESTS" in fine.stdout, fine.stderr[-500:]


def test_a_test_skipped_for_a_missing_dependency_fails_ci():
    """``--fail-on-missing`` (``tests/ci_skips.py``): the old end's environment had no gguf, so its offline-model
    tests skipped and CI passed; a skip that names a missing package now fails the run, other skips do not."""
    from types import SimpleNamespace

    from ci_skips import fail_on_missing

    def session(*reasons):
        reports = [SimpleNamespace(longrepr=("tests/t.py", 3, f"Skipped: {reason}")) for reason in reasons]
        lines = []
        reporter = SimpleNamespace(stats={"skipped": reports}, write_line=lambda text, **_: lines.append(text))
        config = SimpleNamespace(getoption=lambda name, default=None: True,
                                 pluginmanager=SimpleNamespace(get_plugin=lambda name: reporter))
        run = SimpleNamespace(config=config, exitstatus=pytest.ExitCode.OK, lines=lines)
        fail_on_missing(run)
        return run

    missing = session("no GPU on this machine", "gguf not installed: pip install gguf")
    assert missing.exitstatus == pytest.ExitCode.TESTS_FAILED and "gguf not installed" in missing.lines[0]
    assert session("could not import 'lm_eval': cannot import name 'X'").exitstatus == pytest.ExitCode.TESTS_FAILED
    assert session("no GPU on this machine", "vLLM is not installed (CI has none)").exitstatus == pytest.ExitCode.OK


def test_every_ci_test_command_fails_on_a_missing_dependency():
    """Both environments' test commands carry ``--fail-on-missing``; the old end checks the pair it installed."""
    commands = _commands(CI.read_text())
    runs = [line for line in commands if "-m pytest" in line]
    assert len(runs) == 2 and all("--fail-on-missing" in line for line in runs), runs
    assert any("assert v == ('5.17.0', '0.17.0')" in line for line in commands)
