"""The AlphaZero-like MCTS agent (seed 004): chance-node search, its networks, self-play in processes or on Ray.

``agent``: the agent and its training loop; ``nets``: the policy/value networks; ``search``: the tree
search (numba on 4x4); ``selfplay``: the local and Ray worker pools that play self-play games.
"""

from agents.mcts.agent import (
    MCTSAgent,
    MCTSConfig,
    MCTSWorker,
    PositionWindow,
    SelfPlayGame,
    SelfPlayTask,
    make_evaluator,
    play_selfplay_game,
    value_targets,
)

__all__ = [
    "MCTSAgent",
    "MCTSConfig",
    "MCTSWorker",
    "PositionWindow",
    "SelfPlayGame",
    "SelfPlayTask",
    "make_evaluator",
    "play_selfplay_game",
    "value_targets",
]
