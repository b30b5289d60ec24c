"""The studio's look: classic 2048 tile colours (``resources/theme.json``) and tile-number sizing.

Qt-free on purpose: the Qt board widget and the pygame player draw from the same theme.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

RGB = tuple[int, int, int]

THEME_PATH = Path(__file__).resolve().parent.parent / "resources" / "theme.json"


def hex_to_rgb(text: str) -> RGB:
    """``"#f2b179" -> (242, 177, 121)``."""
    t = text.lstrip("#")
    if len(t) != 6:
        raise ValueError(f"colour {text!r} is not #rrggbb")
    return (int(t[0:2], 16), int(t[2:4], 16), int(t[4:6], 16))


@dataclass(frozen=True)
class Theme:
    """Colours as ``#rrggbb`` strings; ``tiles`` maps tile value -> colour up to 2048."""

    window: str = "#faf8ef"
    board: str = "#bbada0"
    empty: str = "#cdc1b4"
    tiles: dict[int, str] = field(default_factory=dict)
    super_tiles: tuple[str, ...] = ("#3c3a32",)
    text_dark: str = "#776e65"
    text_light: str = "#f9f6f2"
    light_text_from: int = 8
    last_spawn: str = "#e0301e"
    hint_arrow: str = "#3a7bd5"
    accent: str = "#8f7a66"
    overlay: str = "#eee4da"
    overlay_alpha: float = 0.73

    def tile_color(self, value: int) -> str:
        """Background of a tile. Past the classic table, each doubling takes the next super colour,
        so 4096, 8192, ... 131072 stay distinguishable instead of all being one dark grey."""
        if value == 0:
            return self.empty
        if value in self.tiles:
            return self.tiles[value]
        top = max(self.tiles) if self.tiles else 2
        if value < top:  # an odd value missing from the table: nearest smaller known colour
            return self.tiles[max(v for v in self.tiles if v <= value)] if self.tiles else self.empty
        steps = max(0, int(value).bit_length() - int(top).bit_length() - 1)
        return self.super_tiles[steps % len(self.super_tiles)]

    def text_color(self, value: int) -> str:
        return self.text_dark if value < self.light_text_from else self.text_light


def digits_scale(digits: int) -> float:
    """Tile-number font height as a fraction of the tile size: big for 2, small for 131072.

    The numbers of the classic game (55/45/35 px on a 107 px tile) extended so that 6- and 7-digit
    tiles still fit; callers also shrink to the measured text width when a font runs wide.
    """
    table = {1: 0.50, 2: 0.46, 3: 0.38, 4: 0.30, 5: 0.25, 6: 0.205, 7: 0.175}
    if digits in table:
        return table[digits]
    return max(0.08, 1.25 / digits)


@lru_cache(maxsize=4)
def load_theme(path: Path = THEME_PATH) -> Theme:
    """The theme file, or the built-in classic colours when it is missing (a broken file is an error)."""
    if not path.exists():
        return Theme(tiles=dict(_CLASSIC_TILES))
    data = json.loads(path.read_text())
    kwargs: dict = {
        k: v for k, v in data.items() if not k.startswith("_") and k in Theme.__dataclass_fields__
    }
    if "tiles" in kwargs:
        kwargs["tiles"] = {int(k): v for k, v in kwargs["tiles"].items()}
    if "super_tiles" in kwargs:
        kwargs["super_tiles"] = tuple(kwargs["super_tiles"])
    theme = Theme(**kwargs)
    for colour in (theme.window, theme.board, theme.empty, *theme.tiles.values(), *theme.super_tiles):
        hex_to_rgb(colour)  # fail at start-up on a typo, not mid-paint
    return theme


_CLASSIC_TILES = {
    2: "#eee4da",
    4: "#ede0c8",
    8: "#f2b179",
    16: "#f59563",
    32: "#f67c5f",
    64: "#f65e3b",
    128: "#edcf72",
    256: "#edcc61",
    512: "#edc850",
    1024: "#edc53f",
    2048: "#edc22e",
}
