"""Typed reads of QSettings values (INI files give strings back, the registry gives ints)."""

from __future__ import annotations

from PySide6.QtCore import QSettings


def get_int(settings: QSettings, key: str, default: int) -> int:
    try:
        return int(str(settings.value(key, default)))
    except (TypeError, ValueError):
        return default


def get_float(settings: QSettings, key: str, default: float) -> float:
    try:
        return float(str(settings.value(key, default)))
    except (TypeError, ValueError):
        return default


def get_bool(settings: QSettings, key: str, default: bool) -> bool:
    value = settings.value(key, default)
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def get_str_list(settings: QSettings, key: str) -> list[str]:
    """A list written with ``setValue(key, [...])``; one item comes back as a plain string."""
    value = settings.value(key, [])
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v]
    return []
