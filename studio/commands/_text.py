"""Moved to :mod:`studio.text` (the window uses it too); kept while imports move over."""

from studio.text import board_lines, duration, number, side_by_side, sparkline, table

__all__ = ["board_lines", "duration", "number", "side_by_side", "sparkline", "table"]
