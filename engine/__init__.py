"""The 2048 engine: rules for boards of any shape, fast 4x4 kernels, batched play, game records.

numpy / numba (and the standard library) only: never imports torch or Qt, never prints.
"""

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
    to_exponents,
    validate_board,
)
from engine.game import Game, IllegalMoveError

__all__ = [
    "DIRECTIONS",
    "Board",
    "Direction",
    "Game",
    "IllegalMoveError",
    "Rules",
    "Spawn",
    "SpawnRng",
    "StepResult",
    "can_move",
    "from_exponents",
    "legal_mask",
    "legal_moves",
    "slide",
    "slide_row_left",
    "to_exponents",
    "validate_board",
]
