"""CI's guard against a silent pass (``pytest --fail-on-missing``, ``.ci/run``): a test skipped because a
dependency could not be imported (``pytest.importorskip``'s "could not import", or a reason that says how to
install it) fails the run, so an environment that lost a package, or a package that no longer imports with
the installed transformers, cannot pass CI by skipping the tests that need it."""
from __future__ import annotations

import re

import pytest

MISSING = re.compile(r"(?i)could not import|pip install")


def missing_dependency_skips(reports) -> list[str]:
    """``path:line: reason`` of each skipped report whose reason says a dependency is missing."""
    found = []
    for report in reports:
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3 and MISSING.search(str(longrepr[2])):
            found.append(f"{longrepr[0]}:{longrepr[1]}: {longrepr[2]}")
    return found


def fail_on_missing(session) -> None:
    """Under ``--fail-on-missing``, a run that skipped a test for a missing dependency exits 1, naming each."""
    if not session.config.getoption("fail_on_missing", False):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # an xdist worker: its reports reach the controller, which judges them
        return
    missing = missing_dependency_skips(reporter.stats.get("skipped", []))
    if missing:
        reporter.write_line("--fail-on-missing: tests skipped for a missing dependency: " + "; ".join(missing), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
