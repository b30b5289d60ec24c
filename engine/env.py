"""``Game2048Env``: 2048 as a Gymnasium environment (any board size), a thin shell over ``Game``.

Registered with Gymnasium as :data:`ENV_ID` (``"studio2048/Game2048-v0"``) when this module is imported,
and through the ``gymnasium.envs`` entry point of ``pyproject.toml`` (:func:`register_envs`), so that
other people's training code makes it by its id::

    import engine.env  # registers it (Gymnasium >= 1.0 no longer loads entry points by itself)
    env = gymnasium.make("studio2048/Game2048-v0")
    envs = gymnasium.make_vec("studio2048/Game2048-v0", num_envs=8, vectorization_mode="sync")
    env = gymnasium.make("engine.env:studio2048/Game2048-v0")  # the same, without the import line
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.envs.registration import register, registry

from engine.core import Rules, to_exponents
from engine.fast import unpack_exponents
from engine.game import Game
from engine.records import GameTrace, play_recorded

#: The environment's Gymnasium id: the ``studio2048`` namespace, versioned as Gymnasium asks (a change to
#: observations, rewards or dynamics that breaks trained agents gets a new version, not the same id).
ENV_ID = "studio2048/Game2048-v0"


class Game2048Env(gym.Env[npt.NDArray[np.uint8], np.int64]):
    """2048 on a ``rows x cols`` board (default: the classic 4x4 rules).

    * **Observation**: tile exponents, ``(rows, cols)`` uint8: 0 = empty, ``k`` = tile ``2**k``
      (``[[2, 0], [0, 2048]] -> [[1, 0], [0, 11]]``). Tiles are unbounded, so the space's high is the
      largest exponent the board can ever hold (``rows * cols + 1``, capped at 255).
    * **Action**: ``Discrete(4)`` in the studio's order ``0 = up, 1 = left, 2 = down, 3 = right``.
    * **Reward**: the merge reward of the move, the sum of the values of the tiles it created
      (``[2 2 2 2]`` left -> 8). 0 for a move that merges nothing.
    * **Termination**: ``terminated`` is True once no move is legal (the game does not stop at 2048).
      ``truncated`` is always False; wrap with ``gymnasium.wrappers.TimeLimit`` for a step cap.
    * **Illegal action** (a move that changes nothing): a no-op. The board, score and spawn stream
      stay as they were, the reward is 0 and ``info["illegal_action"]`` is True; ``terminated``
      stays False (an illegal move never ends an episode: the game is not over while some move is
      legal). Agents should pick from ``info["action_mask"]``.
    * **Info** (``reset`` and ``step``), every key every time but ``trace``:

      - ``action_mask``: ``(4,)`` int8 in action order, 1 = legal (Gymnasium's mask convention);
      - ``score``: int, the game's score so far (the sum of the rewards since ``reset``);
      - ``max_tile``: int, the largest tile's value (2048, not 11);
      - ``moves``: int, legal moves made since ``reset`` (illegal actions are not counted);
      - ``illegal_action``: bool, True when this step's action changed nothing (False after ``reset``);
      - ``trace``: only with ``record=True``, on the step that ends the game (below).
    * **Seeding**: ``reset(seed=s)`` starts ``Game(seed=s)``, the same game the rest of the studio
      plays from that seed; ``reset()`` without a seed draws the game's seed from ``self.np_random``.
      ``reset(options={"board": values})`` starts from a given board (values, not exponents).
    * **Rendering**: ``render_mode="ansi"`` returns ``Game.render_text()``.
    * **Recording** (``record=True``): the episode's moves are kept as a
      :class:`~engine.records.GameTrace` (``self.trace``), and the step that ends the game puts it in
      ``info["trace"]``: a learner training on the env logs its games like every other agent's.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (Gymnasium's convention: a class dict)

    def __init__(
        self,
        rules: Rules | None = None,
        *,
        rows: int | None = None,
        cols: int | None = None,
        render_mode: str | None = None,
        record: bool = False,
    ) -> None:
        if rules is None:
            rules = Rules(rows=4 if rows is None else rows, cols=4 if cols is None else cols)
        elif (rows is not None and rows != rules.rows) or (cols is not None and cols != rules.cols):
            raise ValueError(f"rows/cols {rows}x{cols} disagree with rules {rules.rows}x{rules.cols}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.rules = rules
        self.render_mode = render_mode
        high = min(255, rules.rows * rules.cols + 1)
        self.observation_space = spaces.Box(0, high, shape=rules.shape, dtype=np.uint8)
        self.action_space = spaces.Discrete(4)
        self.game: Game = Game(rules=rules, seed=0)
        self.record = record
        self.trace: GameTrace | None = None

    def _info(self, illegal: bool = False) -> dict[str, Any]:
        return {
            "action_mask": self.game.legal_mask().astype(np.int8),
            "score": self.game.score,
            "max_tile": self.game.max_tile,
            "moves": self.game.moves,
            "illegal_action": illegal,
        }

    def _obs(self) -> npt.NDArray[np.uint8]:
        packed = self.game.packed
        if packed is not None:  # 4x4 fast path: straight from the nibbles
            return unpack_exponents(packed)
        return to_exponents(self.game.board)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.uint8], dict[str, Any]]:
        """Start a new game: ``Game(seed=seed)`` (a seed drawn from ``self.np_random`` when None), or
        the board ``options["board"]`` (tile values). Returns the observation and the info dict."""
        super().reset(seed=seed)
        game_seed = seed if seed is not None else int(self.np_random.integers(0, 2**62))
        board = (options or {}).get("board")
        if board is not None:
            self.game = Game(rules=self.rules, seed=game_seed, board=board)
        else:
            self.game = Game(rules=self.rules, seed=game_seed)
        self.trace = GameTrace.start(self.game) if self.record else None
        return self._obs(), self._info()

    def step(
        self, action: int | np.integer
    ) -> tuple[npt.NDArray[np.uint8], float, bool, bool, dict[str, Any]]:
        """Make move ``action`` (0 up, 1 left, 2 down, 3 right; anything else is a ValueError).

        Returns ``(observation, reward, terminated, truncated, info)``: the exponents after the move
        and its spawn, the merge reward, whether the game is over, False, and the info dict. An
        illegal action is a no-op with reward 0 and ``info["illegal_action"]`` True."""
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= int(action) <= 3:
            raise ValueError(f"action must be 0 (up), 1 (left), 2 (down) or 3 (right), got {action!r}")
        a = int(action)
        if not self.game.legal_mask()[a]:
            return self._obs(), 0.0, self.game.game_over, False, self._info(illegal=True)
        if self.trace is not None:
            result = play_recorded(self.game, a, self.trace)
        else:
            result = self.game.step(a)
        info = self._info()
        if result.game_over and self.trace is not None:
            info["trace"] = self.trace
        return self._obs(), float(result.reward), result.game_over, False, info

    def render(self) -> str | None:
        """The board as text (``Game.render_text()``) with ``render_mode="ansi"``; None otherwise."""
        if self.render_mode == "ansi":
            return self.game.render_text()
        return None

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Legal moves as bools (the method sb3-contrib's MaskablePPO looks for)."""
        return self.game.legal_mask()


def register_envs() -> None:
    """Register :class:`Game2048Env` with Gymnasium as :data:`ENV_ID` (a second call does nothing).

    The target of the ``gymnasium.envs`` entry point (Gymnasium 0.29 calls it when it is imported;
    Gymnasium >= 1.0 dropped that plug-in loading, so this module also calls it on import). Keyword
    arguments of ``gymnasium.make`` reach the constructor: ``gymnasium.make(ENV_ID, rows=3, cols=3)``.
    """
    # registry and register come from gymnasium.envs.registration, not from the package: Gymnasium 0.29
    # runs entry points while its own __init__ is still importing, before ``gymnasium.register`` exists.
    if ENV_ID not in registry:  # registering twice would warn "Overriding environment"
        register(id=ENV_ID, entry_point="engine.env:Game2048Env")


register_envs()
