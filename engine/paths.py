"""Where the studio keeps its data: the platform's user data dir unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "STUDIO2048_DATA_DIR"
APP_NAME = "2048-studio"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``override`` (``--data-dir``), else $STUDIO2048_DATA_DIR, else the user data dir.

    Created if missing.
    """
    if override is not None:
        path = Path(override)
    elif os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    path = path.expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_path(directory: str | os.PathLike[str] | None = None) -> Path:
    return data_dir(directory) / "studio.sqlite3"


def checkpoints_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    path = data_dir(directory) / "checkpoints"
    path.mkdir(parents=True, exist_ok=True)
    return path
