"""The application layer (``studio/services``) runs without Qt: the CLI, a training child and a Ray
trial import it, and none of them may need a display or PySide6 (layers: engine <- agents <- studio
services <- Qt front ends)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import studio.services

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter: the tests around this one import PySide6 into this process, so sys.modules here
# says nothing about what the services import.
PROBE = """
import importlib, json, sys
names = sys.argv[1:]
for name in names:
    importlib.import_module(name)
qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph"))
print(json.dumps({"imported": names, "qt": qt}))
"""


def _service_modules() -> list[str]:
    return sorted(
        f"studio.services.{m.name}" for m in pkgutil.iter_modules(studio.services.__path__) if not m.ispkg
    )


def test_the_probe_sees_qt_when_a_module_imports_it():
    # The check's slow twin: a module that does import Qt is caught (so an empty answer means something).
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "studio.worker"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert "PySide6.QtCore" in json.loads(out.stdout)["qt"]


def test_no_service_module_imports_qt():
    modules = _service_modules()
    # the modules this wave added or moved logic into are among those checked
    assert {"studio.services.messages", "studio.services.runs", "studio.services.sweep"} <= set(modules)
    assert "studio.services.sweep_ray" in modules and "studio.services.training_process" in modules
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["imported"] == modules
    assert answer["qt"] == []
