"""Tick text of the curves' axes (Qt-free): compact SI numbers, wall time in clock units, tiles.

:class:`studio.widgets.curves.axes.SIAxis` and ``TileAxis`` draw with these; so do the figure
scripts and the Progress tab (a tick says "2.5k", "1h10m", "8k").
"""

from __future__ import annotations

import math


def format_si(value: float, spacing: float | None = None) -> str:
    """A compact tick string: 2e6 -> "2M", 3e5 -> "300k", 2500 -> "2.5k", 0.25 -> "0.25", 1e-5 -> "1e-5".

    ``spacing`` (the distance between neighbouring ticks) sets the decimals, so neighbours differ.
    """
    if not math.isfinite(value):
        return ""
    if value == 0:
        return "0"
    mag = abs(value)
    units = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
    unit, suffix = next(((u, x) for u, x in units if mag >= u * 0.9995), (1.0, ""))
    if unit == 1.0 and mag < 1e-3:
        digits = 0 if spacing is None or spacing <= 0 else max(0, math.ceil(math.log10(mag / spacing) - 1e-9))
        text = f"{value:.{min(digits, 3)}e}"
        mant, exp = text.split("e")
        mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
        return f"{mant}e{int(exp)}"
    step = (spacing if spacing and spacing > 0 else mag / 100) / unit
    decimals = min(6, max(0, math.ceil(-math.log10(step) - 1e-9)))
    text = f"{value / unit:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text + suffix


def format_duration_tick(seconds: float, spacing: float | None = None) -> str:
    """Wall-time ticks: "45s", "3m", "1.5h", "2d".

    With the ticks' ``spacing`` in whole seconds, the value is written in clock units down to the
    spacing's own unit: "1h10m" on a 10-minute axis, "1m30s" on a 30-second one (a decimal hour,
    "1.2h", cannot say where between 1h and 1h30m a tick is).
    """
    if not math.isfinite(seconds):
        return ""
    if (
        spacing is not None
        and math.isfinite(spacing)
        and spacing >= 1
        and abs(spacing - round(spacing)) < 1e-6
    ):
        whole = round(spacing)
        unit = next(u for u in (86400, 3600, 60, 1) if whole % u == 0)
        left = round(abs(seconds) / unit) * unit
        parts = []
        for size, suffix in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
            if size >= unit and left >= size:
                parts.append(f"{left // size}{suffix}")
                left %= size
        text = "".join(parts) or "0"
        return ("-" + text) if seconds < 0 and text != "0" else text
    mag = abs(seconds)
    for unit, suffix in ((86400, "d"), (3600, "h"), (60, "m")):
        if mag >= unit:
            return format_si(seconds / unit, None if mag / unit >= 10 else 0.1).rstrip("kMGT") + suffix
    step = (
        spacing
        if spacing is not None and math.isfinite(spacing) and spacing > 0
        else (1 if mag >= 1 else None)
    )
    return format_si(seconds, step) + "s"


# Tick steps of a wall-time axis, in seconds: clock units a reader counts in (5, 10, 15, 30 minutes;
# 1, 2, 3, 6, 12 hours), where pyqtgraph's decimal steps gave ticks at 16.7m, 33.3m and 1.1h.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def time_tick_spacing(decimal_major: float) -> list[tuple[float, float]]:
    """Major and minor tick spacing in clock units, close (in ratio) to pyqtgraph's decimal choice."""
    if decimal_major >= 1.5 * 86400:
        days = decimal_major / 86400
        mag = 10 ** math.floor(math.log10(days))
        major = min((k * mag for k in (1, 2, 5, 10)), key=lambda d: abs(math.log(d / days))) * 86400
        return [(major, 0.0), (major / (5 if major / 86400 % 5 == 0 else 2), 0.0)]
    major = min(_TIME_STEPS, key=lambda s: abs(math.log(s / decimal_major)))
    minors = [s for s in _TIME_STEPS if s < major and major % s == 0 and major / s <= 6]
    levels = [(float(major), 0.0)]
    if minors:
        levels.append((float(minors[0]), 0.0))
    return levels


def tile_label(exponent: int, whole_below: int = 13) -> str:
    """A tile (2 ** ``exponent``) as players name it on an axis: 2048 and 4096 in full, then 8k, 16k,
    32k, 64k, 128k, 1M; tiles below 2 ** ``whole_below`` in full (the Games tab's bars keep 8192).

    Binary thousands, so a power of two reads as one: an SI prefix made 8192 "8.19k" and 16384 "16.4k".
    """
    if exponent < whole_below:
        return str(2**exponent)
    if exponent < 20:
        return f"{2 ** (exponent - 10)}k"
    return f"{2 ** (exponent - 20)}M"
