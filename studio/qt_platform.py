"""Can Qt open a window here? Asked before Qt is, because Qt's own answer is an abort.

On Linux, Qt's X11 platform plugin (``xcb``) links a dozen system libraries that a minimal desktop or
a fresh container may lack (``libxcb-cursor0``, ``libxcb-icccm4``, ``libxcb-keysyms1`` are the usual
ones). When one is missing, or no X server answers on ``$DISPLAY``, ``QApplication()`` prints a
paragraph about plugins and kills the process. :func:`platform_problem` finds the same problems first
with ``ctypes`` and says them in one line that names the Debian/Ubuntu packages and the command to
install them (as root, which is not assumed to be ``sudo``).

Nothing here imports Qt. Other platforms (offscreen, wayland, Windows, macOS) are not checked.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

#: The system libraries Qt 6's xcb plugin (``libqxcb.so`` and ``libQt6XcbQpa.so``) links, by soname.
XCB_LIBRARIES: tuple[str, ...] = (
    "libxcb.so.1",
    "libX11.so.6",
    "libX11-xcb.so.1",
    "libxcb-cursor.so.0",
    "libxcb-icccm.so.4",
    "libxcb-keysyms.so.1",
    "libxcb-image.so.0",
    "libxcb-util.so.1",
    "libxcb-randr.so.0",
    "libxcb-render.so.0",
    "libxcb-render-util.so.0",
    "libxcb-shape.so.0",
    "libxcb-shm.so.0",
    "libxcb-sync.so.1",
    "libxcb-xfixes.so.0",
    "libxcb-xkb.so.1",
    "libxkbcommon.so.0",
    "libxkbcommon-x11.so.0",
    "libfontconfig.so.1",
    "libGL.so.1",
    "libEGL.so.1",
)

Loader = Callable[[str], object]


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships a library, by the naming policy:
    ``libxcb-cursor.so.0 -> libxcb-cursor0``, ``libxkbcommon-x11.so.0 -> libxkbcommon-x11-0``,
    ``libGL.so.1 -> libgl1``."""
    m = re.fullmatch(r"(.+?)\.so\.(\d+).*", soname)
    if not m:
        return soname
    base, major = m.group(1).lower(), m.group(2)
    return f"{base}-{major}" if base[-1].isdigit() else f"{base}{major}"


def missing_libraries(load: Loader = ctypes.CDLL, plugin: Path | None = None) -> list[str]:
    """Sonames of the xcb plugin's libraries that cannot be loaded (the plugin's own load error names
    any library outside :data:`XCB_LIBRARIES`)."""
    missing = []
    for name in XCB_LIBRARIES:
        try:
            load(name)
        except OSError:
            missing.append(name)
    if not missing and plugin is not None and plugin.exists():
        try:
            load(str(plugin))
        except OSError as e:  # "libfoo.so.1: cannot open shared object file: No such file or directory"
            m = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object", str(e))
            missing.append(m.group(1) if m else str(e))
    return missing


def display_problem(display: str, load: Loader = ctypes.CDLL) -> str | None:
    """None when an X server answers on ``display``; else what is wrong, in a few words."""
    try:
        xcb = load("libxcb.so.1")
        connect = xcb.xcb_connect  # type: ignore[attr-defined]
        connect.restype = ctypes.c_void_p
        connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        has_error = xcb.xcb_connection_has_error  # type: ignore[attr-defined]
        has_error.argtypes = [ctypes.c_void_p]
        disconnect = xcb.xcb_disconnect  # type: ignore[attr-defined]
        disconnect.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None  # reported by missing_libraries
    conn = connect(display.encode(), None)
    try:
        if has_error(conn):
            return f"no X server answers on display {display!r}"
    finally:
        disconnect(conn)
    return None


def _xcb_plugin() -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"


def platform_problem(
    env: Mapping[str, str] | None = None,
    *,
    platform: str | None = None,
    load: Loader = ctypes.CDLL,
    plugin: Path | None = None,
) -> str | None:
    """None when Qt can open its window here; else one line saying why not and what to do."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None
    chosen = env.get("QT_QPA_PLATFORM", "").split(":")[0].strip()
    if chosen and chosen != "xcb":
        return None  # offscreen, wayland, vnc, ...: Qt reports those itself
    if not chosen and env.get("WAYLAND_DISPLAY"):
        return None  # a Wayland session: Qt uses its wayland plugin
    display = env.get("DISPLAY", "")
    if not display:
        return (
            "no display to open the window on ($DISPLAY is not set): start it from a desktop session, "
            "or run the headless commands (python main.py --help)"
        )
    missing = missing_libraries(load, plugin if plugin is not None else _xcb_plugin())
    if missing:
        packages = " ".join(dict.fromkeys(debian_package(m) for m in missing))
        # No sudo in the command: a container or a minimal system may have none, and whoever is root
        # knows how they become it.
        return (
            f"Qt's X11 plugin needs {', '.join(missing)}, not installed here: install the packages "
            f"{packages} with your package manager, e.g. as root on Debian/Ubuntu: apt-get install -y {packages}"
        )
    problem = display_problem(display, load)
    if problem:
        return f"{problem} (is the X server running? DISPLAY={display})"
    return None
