"""What turns SB3's ``learn`` loop into a studio training generator: the environments, a callback that
makes metric events of finished games, a logger output that makes them of SB3's logged values, and the
step-counted exploration schedule."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import KVWriter
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from agents.base import MetricEvent
from engine import Rules
from engine.env import Game2048Env

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm

    from agents.training import TrainTracker

#: SB3 logger keys -> studio metric names (and a sign: SB3 logs the entropy *loss*, minus the entropy)
LOGGED: dict[str, tuple[str, float]] = {
    "train/loss": ("loss", 1.0),
    "train/policy_gradient_loss": ("policy_loss", 1.0),
    "train/policy_loss": ("policy_loss", 1.0),
    "train/value_loss": ("value_loss", 1.0),
    "train/entropy_loss": ("entropy", -1.0),
    "train/explained_variance": ("explained_variance", 1.0),
    "train/approx_kl": ("approx_kl", 1.0),
    "train/clip_fraction": ("clip_fraction", 1.0),
    "train/learning_rate": ("lr", 1.0),
    "rollout/ep_rew_mean": ("ep_reward", 1.0),
    "rollout/exploration_rate": ("epsilon", 1.0),
}


def shape_reward(score_gained: npt.ArrayLike, kind: str, scale: float) -> npt.NDArray[np.float64]:
    """The reward the learner sees for moves that gained ``score_gained``: the score gained
    (``kind`` "score") or log2(1 + score gained), times ``scale``."""
    raw = np.asarray(score_gained, dtype=np.float64)
    return (raw if kind == "score" else np.log2(1.0 + raw)) * scale


class ShapedReward(gym.Wrapper[Any, Any, Any, Any]):
    """The reward the learner sees: the score gained, or log2(1 + score gained), times a scale."""

    def __init__(self, env: gym.Env[Any, Any], kind: str, scale: float) -> None:
        super().__init__(env)
        self.kind = kind
        self.scale = scale

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, float(shape_reward(float(reward), self.kind, self.scale)), terminated, truncated, info


def make_vec_env(rules: Rules, n_envs: int, reward: str, scale: float) -> DummyVecEnv:
    """``n_envs`` recording 2048 games side by side, each shaped and monitored (SB3's episode rewards)."""

    def factory() -> Callable[[], gym.Env[Any, Any]]:
        return lambda: Monitor(ShapedReward(Game2048Env(rules, record=True), reward, scale))

    return DummyVecEnv([factory() for _ in range(n_envs)])


def game_of(vec_env: DummyVecEnv, i: int = 0) -> Any:
    """The :class:`engine.Game` that sub-environment ``i`` plays now."""
    env: Any = vec_env.envs[i].unwrapped
    return env.game


class LoggedValues(KVWriter):
    """An SB3 logger output keeping the last value of each key in :data:`LOGGED`, by studio name."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def write(
        self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0
    ) -> None:
        for key, value in key_values.items():
            if key in LOGGED and isinstance(value, (int, float, np.number)) and math.isfinite(float(value)):
                name, sign = LOGGED[key]
                self.values[name] = sign * float(value)

    def take(self) -> dict[str, float]:
        out, self.values = self.values, {}
        return out

    def close(self) -> None:
        pass


class StepSchedule:
    """Exploration falling linearly from ``start`` to ``end`` over the model's first ``steps`` moves.

    SB3 schedules read the fraction of *this* ``learn`` call left; the studio calls ``learn`` in chunks
    under a budget that may be seconds or games, so the schedule counts the model's lifetime moves.
    """

    def __init__(self, model: BaseAlgorithm, start: float, end: float, steps: int) -> None:
        self.model, self.start, self.end, self.steps = model, start, end, steps

    def __call__(self, _progress_remaining: float) -> float:
        frac = min(1.0, self.model.num_timesteps / self.steps)
        return self.start + frac * (self.end - self.start)


class StudioCallback(BaseCallback):
    """Called by SB3 after every vectorised step: counts moves, makes an episode event of each finished
    game (its trace included) and a live-board event each second, and ends ``learn`` early (returning
    False) on stop, pause or a used budget."""

    def __init__(self, agent: Any, tracker: TrainTracker, epsilon: Callable[[], float | None]) -> None:
        super().__init__(verbose=0)
        self.agent = agent
        self.tracker = tracker
        self.epsilon = epsilon
        self.events: list[MetricEvent] = []
        self.live_t = tracker.clock.call_seconds
        self.ended_early = False

    def _on_step(self) -> bool:
        tracker, counters = self.tracker, self.agent.counters
        counters.steps = int(self.model.num_timesteps)
        infos: list[dict[str, Any]] = self.locals.get("infos", [])
        dones = self.locals.get("dones", ())
        for done, info in zip(dones, infos):
            trace = info.get("trace") if done else None
            if trace is None:
                continue
            counters.episodes += 1
            metrics = {
                "score": trace.final_score,
                "max_tile": trace.max_tile,
                "moves": trace.n_moves,
                "steps_per_s": tracker.steps_per_s(),
            }
            eps = self.epsilon()
            if eps is not None:
                metrics["epsilon"] = eps
            self.events.append(tracker.event("episode", metrics, game=trace))
        if tracker.clock.call_seconds - self.live_t >= 1.0:
            self.live_t = tracker.clock.call_seconds
            board = game_of(self.agent.vec_env).board
            self.events.append(tracker.event("update", {"steps_per_s": tracker.steps_per_s()}, board=board))
        control = tracker.control
        if control.stopped or control.paused or tracker.budget_used():
            self._end_early()
            return False
        return True

    def _end_early(self) -> None:
        """SB3 returns before it keeps the step's new observation: keep it, so that the next ``learn``
        call goes on from the boards the games are at."""
        self.ended_early = True
        new_obs = self.locals.get("new_obs")
        if new_obs is not None:
            self.model._last_obs = new_obs
        dones = self.locals.get("dones")
        if dones is not None and hasattr(self.model, "_last_episode_starts"):
            self.model._last_episode_starts = np.asarray(dones, dtype=bool)
