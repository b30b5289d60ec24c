"""2048 Studio's front ends: the PySide6 GUI, the command line, the pygame player.

Owns no game or learning logic: it calls ``engine`` and ``agents``. Qt is imported only by the GUI
modules, so the headless commands run without a display.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from studio.app import create_window

__all__ = ["create_window"]


def __getattr__(name: str) -> Any:
    # Lazy: ``import studio`` (the CLI) must not import Qt; ``studio.create_window`` does.
    if name == "create_window":
        from studio.app import create_window

        return create_window
    raise AttributeError(f"module 'studio' has no attribute {name!r}")
