"""``.ci/run`` can fail (issue 54): under ``set -e`` bash ignores a failing command that is not the last of an
``a && b && c`` list, so a check written inside one (the docs build was) passes CI whatever it gives."""
import os
import re
import stat
import subprocess
from pathlib import Path

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


def test_the_docs_step_fails_ci_when_the_build_fails(tmp_path):
    """The docs lines of ``.ci/run``, run under its own ``set -euo pipefail`` with a ``python3`` that fails as a
    broken ``mkdocs build --strict`` does: the script stops there, non-zero, before the test command."""
    lines = CI.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("site="))
    end = next(i for i, line in enumerate(lines) if "pytest" in line)
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Aborted with 1 warnings in strict mode!' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    script = "set -euo pipefail\n" + "\n".join(lines[start:end]) + "\necho REACHED-THE-TESTS\n"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert done.returncode != 0 and "REACHED-THE-TESTS" not in done.stdout, (done.returncode, done.stdout)
