"""Checks of the options that name something outside forgetless, before any work: ``--push-to-hub``
(a repository id, and not offline) and ``--report-to`` (Trainer integrations that are installed)."""
from __future__ import annotations

import re

from ..data.hub import hub_offline
from ..errors import ConfigError, ForgetlessError

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check_push_target(repo_id: str | None) -> None:
    """Fail before any work when ``--push-to-hub`` cannot succeed (malformed id, offline mode)."""
    if repo_id is None:
        return
    if not _REPO_ID.match(repo_id):
        raise ConfigError(f"--push-to-hub {repo_id!r}: expected a hub repository id like 'user/name'")
    if hub_offline():
        raise ForgetlessError(f"--push-to-hub {repo_id}: HF_HUB_OFFLINE is set, nothing can be uploaded "
                              "(unset it, or drop --push-to-hub)")


def check_report_to(value: str | None) -> None:
    """``--report-to``: known Trainer integrations that are installed, or a one-line error."""
    names = [x.strip() for x in (value or "none").split(",") if x.strip()]
    if names in ([], ["none"]):
        return
    # transformers' integrations import its Trainer stack (peft: seconds): only when a name is to be checked
    from transformers.integrations import get_available_reporting_integrations
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    for name in names:
        if name not in INTEGRATION_TO_CALLBACK:
            raise ConfigError(f"--report-to {name!r}: unknown; known: none, {', '.join(sorted(INTEGRATION_TO_CALLBACK))}")
        if name not in get_available_reporting_integrations():
            raise ConfigError(f"--report-to {name!r}: the integration is not installed (pip install {name})")
