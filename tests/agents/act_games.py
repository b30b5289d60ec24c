"""The slow road of the jitted game loops (``play_fast``, ``eval --fast``): the same games through
``agent.act``, one Python call per move."""

from __future__ import annotations

from agents.base import Agent
from engine import Game


def act_games(agent: Agent, games: int, seed: int) -> tuple[list[int], list[int]]:
    """Game ``i`` on ``Game(seed=seed + i)`` played to the end through ``agent.act``: scores, max tiles."""
    scores, tiles = [], []
    for i in range(games):
        g = Game(seed=seed + i, rules=agent.rules)
        while not g.game_over:
            g.step(agent.act(g))
        scores.append(g.score)
        tiles.append(g.max_tile)
    return scores, tiles
