"""Stable-Baselines3 and sb3-contrib algorithms as studio agents (the optional ``.[sb3]`` extra).

``sb3-ppo``, ``sb3-a2c``, ``sb3-dqn`` and ``sb3-maskppo`` (MaskablePPO with the engine's legal-move mask)
train on :class:`engine.env.Game2048Env` through SB3's own ``learn`` loop, with their hyper-parameters as
knobs, SB3's logger values as metric events, their games as traces, and checkpoints in the studio's
format (the policy's weights and optimiser state as npz arrays plus JSON: never SB3's pickled
``model.save``). They are registered through the ``studio2048.agents`` entry-point group, so a studio
without the extra lists them as unavailable with the reason below.
"""

from __future__ import annotations

try:
    import sb3_contrib  # noqa: F401
    import stable_baselines3  # noqa: F401
except ImportError as e:  # the plug-in loader shows this one line for each sb3-* agent
    raise ImportError("Stable-Baselines3 is not installed: pip install -e .[sb3]") from e
