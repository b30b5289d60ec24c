"""What the launch form remembers between sessions (QSettings): the last agent, the budget, and each
agent's settings, so the form comes back as it was left, not as "Episodes 1000" and the defaults."""

from __future__ import annotations

import json
import logging
from typing import Any

from PySide6.QtCore import QSettings

from agents.config import ConfigError
from studio.widgets.config_form import ConfigForm

log = logging.getLogger(__name__)


class FormMemory:
    """The form's remembered values under ``train/...`` of ``settings`` (None: nothing is kept)."""

    def __init__(self, settings: QSettings | None) -> None:
        self.settings = settings

    def load(self, key: str) -> dict[str, Any]:
        """A JSON object kept under ``key``; {} when none (or a damaged one)."""
        if self.settings is None:
            return {}
        try:
            value = json.loads(str(self.settings.value(key, "") or "{}"))
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def save(self, key: str, value: dict[str, Any]) -> None:
        """Keep ``value`` under ``key`` (a value JSON cannot hold is not kept: its owner starts from
        the defaults next time)."""
        if self.settings is None:
            return
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            log.warning("cannot remember %s", key, exc_info=True)
            return
        self.settings.setValue(key, text)

    def restore_config(self, agent: str, form: ConfigForm) -> None:
        """The settings ``agent`` had the last time (each field that still exists and takes its value)."""
        known = set(form.values())
        for name, value in self.load(f"train/config/{agent}").items():
            if name not in known:
                continue
            try:
                form.set_values({name: value})
            except (ConfigError, TypeError, ValueError):  # a setting whose kind changed: its default
                log.info("remembered %s=%r of %s not restored", name, value, agent)
