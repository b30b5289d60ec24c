"""The 2048 engine: rules for boards of any shape, fast 4x4 kernels, batched play, game records.

numpy / numba (and the standard library) only: never imports torch or Qt, never prints.
"""

from typing import TYPE_CHECKING

from engine.batch import BatchEngine
from engine.core import (
    DIRECTIONS,
    Board,
    Direction,
    Rules,
    Spawn,
    SpawnRng,
    StepResult,
    can_move,
    from_exponents,
    legal_mask,
    legal_moves,
    slide,
    slide_row_left,
    slide_unchecked,
    to_exponents,
    validate_board,
)
from engine.fast import PlayoutBatch, PlayoutResult, pack, random_playout, random_playouts, unpack
from engine.game import Game, IllegalMoveError

__all__ = [
    "DIRECTIONS",
    "BatchEngine",
    "Board",
    "Direction",
    "Game",
    "Game2048Env",
    "IllegalMoveError",
    "PlayoutBatch",
    "PlayoutResult",
    "Rules",
    "Spawn",
    "SpawnRng",
    "StepResult",
    "can_move",
    "from_exponents",
    "legal_mask",
    "legal_moves",
    "pack",
    "random_playout",
    "random_playouts",
    "slide",
    "slide_row_left",
    "slide_unchecked",
    "to_exponents",
    "unpack",
    "validate_board",
]

if TYPE_CHECKING:
    from engine.env import Game2048Env


def __getattr__(name: str) -> object:
    # Game2048Env pulls in gymnasium (~0.1 s): import it only when someone asks for it.
    if name == "Game2048Env":
        from engine.env import Game2048Env

        return Game2048Env
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
