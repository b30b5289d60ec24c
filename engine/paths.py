"""Where the studio keeps its data: the platform's user data dir unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "STUDIO2048_DATA_DIR"
APP_NAME = "2048-studio"


class DataDirError(ValueError):
    """A data directory the studio cannot use; the message says which and why, in one line."""


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``override`` (``--data-dir``), else $STUDIO2048_DATA_DIR, else the user data dir.

    Created if missing. A path that is empty, is a file, lies under a file or cannot be written is a
    DataDirError before anything is written (an empty ``--data-dir ""`` would otherwise mean "here").
    """
    if override is not None:
        if not str(override).strip():
            raise DataDirError("the data dir is empty: give a directory (or leave --data-dir out)")
        path = Path(override)
    elif os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR])
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    path = path.expanduser()
    if path.is_symlink() and not path.exists():  # mkdir would say "exists" and we "is a file"
        raise DataDirError(f"data dir {path} is a link to {os.readlink(path)}, which does not exist")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DataDirError(f"data dir {path} is a file, not a directory") from None
    except NotADirectoryError:
        raise DataDirError(f"data dir {path} lies under a file, not a directory") from None
    except OSError as e:
        raise DataDirError(f"cannot create data dir {path}: {e.strerror or e}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise DataDirError(f"data dir {path} is not writable")
    return path


def database_path(directory: str | os.PathLike[str] | None = None) -> Path:
    return data_dir(directory) / "studio.sqlite3"


def checkpoints_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    path = data_dir(directory) / "checkpoints"
    path.mkdir(parents=True, exist_ok=True)
    return path
