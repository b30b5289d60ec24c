"""Static resources: theme colours, presets (one JSON file per seed experiment), icons."""

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent
PRESETS_DIR = RESOURCES_DIR / "presets"
