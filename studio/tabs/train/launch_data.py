"""The games an imitation learner would learn from, as the launch form says them under the agent:
how many games and moves its filters select in the store, and whether that is too few."""

from __future__ import annotations

from pathlib import Path

from agents.base import Agent
from agents.config import ConfigError
from engine import Rules
from studio.tabs.common import ERROR_STYLE, NOTE_STYLE


def learns_from_games(cls: type[Agent] | None) -> bool:
    """Whether agent class ``cls`` has imitation's settings (filters over the store's games)."""
    # Known by the config's classes, not by importing agents.imitation (torch) for another agent:
    # a config built on ImitationConfig has that module loaded already.
    return cls is not None and any(
        (k.__module__, k.__qualname__) == ("agents.imitation", "ImitationConfig")
        for k in cls.config_cls.__mro__
    )


def count_data(
    cls: type[Agent] | None, values: dict, rules: Rules, data_dir: str | Path | None
) -> tuple[int, int] | None:
    """(games, moves) the imitation filters ``values`` select in the store now; None when ``cls`` is
    not imitation, or the settings cannot be read yet."""
    if cls is None or not learns_from_games(cls):
        return None
    from agents.imitation import count_examples

    try:
        config = cls.config_cls.from_dict(values)
        return count_examples(config, rules, data_dir)  # type: ignore[arg-type]
    except (ConfigError, TypeError, ValueError, OSError):  # a half-typed filter, a damaged store
        return None


def data_note(games: int, moves: int, rules: Rules, enough: int) -> tuple[str, str]:
    """The line under the agent for ``games`` and ``moves`` selected, and its style: red below
    ``enough`` moves or with none at all."""
    if moves >= enough:
        return f"These filters select {games:,} games, {moves:,} moves.", NOTE_STYLE
    if moves == 0:
        text = (
            f"No {rules.rows}×{rules.cols} games match these filters: play some first, or loosen the filters."
        )
        return text, ERROR_STYLE
    return f"{small_data_warning(games, moves)} Play more games, or loosen the filters.", ERROR_STYLE


def small_data_warning(games: int, moves: int) -> str:
    """The one line that says imitation would learn from too few moves."""
    of = f" (in {games:,} game{'s' if games != 1 else ''})"
    return f"{moves:,} moves{of}: too few to learn from; validation accuracy will be near chance."
