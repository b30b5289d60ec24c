"""Seed 000's pygame interface, rebuilt on the engine: ``python main.py play --pygame``.

The look is the seed's (400 x 450 window for 4x4: 100 px tiles, the score under the board, the last
spawned tile's number in red) with the engine's rules for any board, and every move logged to the same
store as the Qt window (source "human") the moment it is made. pygame is imported here only, when the
player starts, so nothing else in the studio needs it.

Keys: arrows / WASD move (as in the seed), N starts a new game, Esc or Q quits.
"""

from __future__ import annotations

import sys
from typing import Any

from engine import Direction, Rules
from engine.store import GameRecorder, GameStore
from studio.theme import digits_scale, hex_to_rgb, load_theme

SEED_BACKGROUND = (250, 245, 240)  # seed 000's window colour
TEXT = (0, 0, 0)  # the seed wrote numbers in black ...
LAST_TILE = (255, 0, 0)  # ... and the last added tile in red
SCORE_BAR = 50


def _keymap(pygame: Any) -> dict[int, Direction]:
    return {
        pygame.K_w: Direction.UP,
        pygame.K_UP: Direction.UP,
        pygame.K_a: Direction.LEFT,
        pygame.K_LEFT: Direction.LEFT,
        pygame.K_s: Direction.DOWN,
        pygame.K_DOWN: Direction.DOWN,
        pygame.K_d: Direction.RIGHT,
        pygame.K_RIGHT: Direction.RIGHT,
    }


class PygamePlayer:
    """State and drawing of the pygame window; :func:`run_pygame` runs its event loop."""

    def __init__(self, pygame: Any, store: GameStore, rules: Rules, seed: int | None = None) -> None:
        self.pg = pygame
        self.store = store
        self.rules = rules
        self.theme = load_theme()
        self.keys = _keymap(pygame)
        self.recorder = GameRecorder(store, rules=rules, seed=seed, lazy=True)
        # 100 px tiles like the seed, smaller on big boards so the window fits a laptop screen.
        self.tile = max(24, min(100, 800 // max(rules.rows, rules.cols)))
        self.width = max(self.tile * rules.cols, 260)
        self.height = self.tile * rules.rows + SCORE_BAR
        self._fonts: dict[int, Any] = {}

    # ------------------------------------------------------------------ input
    def handle(self, event: Any) -> bool:
        """Apply one pygame event; False when the player asked to quit."""
        pg = self.pg
        if event.type == pg.QUIT:
            return False
        if event.type != pg.KEYDOWN:
            return True
        if event.key in (pg.K_ESCAPE, pg.K_q):
            return False
        if event.key == pg.K_n:
            self.new_game()
        elif event.key in self.keys:
            self.recorder.play(self.keys[event.key])  # logged before it returns; illegal moves do nothing
        return True

    def new_game(self) -> None:
        self.recorder.close("abandoned")
        self.recorder = GameRecorder(self.store, rules=self.rules, lazy=True)

    def quit(self) -> None:
        self.recorder.close("abandoned")

    # ------------------------------------------------------------------ drawing
    def font(self, size: int) -> Any:
        if size not in self._fonts:
            self._fonts[size] = self.pg.font.SysFont("arial", size, bold=False)
        return self._fonts[size]

    def draw(self, screen: Any) -> None:
        pg = self.pg
        t = self.tile
        screen.fill(SEED_BACKGROUND)
        board = self.recorder.board
        last = {(s.row, s.col) for s in self.recorder.game.last_spawns}
        for i in range(self.rules.rows):
            for j in range(self.rules.cols):
                value = int(board[i, j])
                pg.draw.rect(screen, hex_to_rgb(self.theme.tile_color(value)), (j * t, i * t, t, t))
                pg.draw.rect(
                    screen, hex_to_rgb(self.theme.board), (j * t, i * t, t, t), width=max(1, t // 25)
                )
                if value:
                    digits = len(str(value))
                    # The seed's 40 px Arial on 100 px tiles, shrinking for long numbers (131072 fits).
                    size = max(8, int(t * min(0.4, digits_scale(digits))))
                    colour = LAST_TILE if (i, j) in last else (TEXT if value <= 2048 else (255, 255, 255))
                    surface = self.font(size).render(str(value), True, colour)
                    screen.blit(surface, surface.get_rect(center=(j * t + t // 2, i * t + t // 2)))
        s = self.recorder
        text = f"Score: {s.score}"
        if s.game_over:
            text += "   Game over: N for a new game"
        surface = self.font(32 if len(text) < 20 else 20).render(text, True, TEXT)
        screen.blit(surface, surface.get_rect(center=(self.width // 2, self.height - SCORE_BAR // 2)))


def run_pygame(store: GameStore, rules: Rules | None = None, seed: int | None = None) -> int:
    """Play in a pygame window until it is closed; every move goes to ``store``. The exit status."""
    try:
        import pygame
    except ImportError:
        print(
            "The pygame player needs pygame, which is not installed here: pip install pygame "
            "(or play in the studio window: python main.py)",
            file=sys.stderr,
        )
        return 1
    rules = rules or Rules()
    # Display and fonts only: pygame.init() would also open the sound device, which a 2048 game never uses.
    pygame.display.init()
    pygame.font.init()
    try:
        player = PygamePlayer(pygame, store, rules, seed)
        screen = pygame.display.set_mode((player.width, player.height))
        pygame.display.set_caption("2048 Game")
        clock = pygame.time.Clock()
        running = True
        while running:
            for event in pygame.event.get():
                if not player.handle(event):
                    running = False
                    break
            player.draw(screen)
            pygame.display.flip()
            clock.tick(60)  # the seed's loop spun a core; 60 frames a second is plenty for key presses
        player.quit()
    finally:
        pygame.quit()
    return 0
