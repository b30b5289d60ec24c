"""PPO records each update's statistics once (issue 48): with the first game that ends after the update.

The live event (a board for displays, once a second) carried them too, so every shown update's loss
was stored twice; two equal values in a row read as a constant to the curves, which folded the loss
into a line of text and back at the next update (the grid laid out anew twice, the window's longest
stalls while PPO trained).
"""

from __future__ import annotations

import time

import pytest
import torch

import agents.base
from agents.base import Budget
from agents.ppo import PPOAgent, PPOConfig

STATS = ("loss", "value_loss", "entropy", "clip_frac")


class HalfSecondClock:
    """The training clock, every reading half a second after the last: a live event each few updates,
    whatever the machine's speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 0.5
        return self.now

    def process_time(self) -> float:
        return time.process_time()


def test_live_events_carry_no_update_statistics_and_each_loss_is_recorded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch.set_num_threads(1)
    monkeypatch.setattr(agents.base, "time", HalfSecondClock())
    agent = PPOAgent(PPOConfig(**PPOAgent.smoke_config), seed=3)
    events = list(agent.train(Budget(steps=1200)))
    live = [e for e in events if e.kind == "update"]
    assert len(live) >= 5
    for e in live:
        assert e.board is not None and "steps_per_s" in e.metrics
        assert not set(STATS) & set(e.metrics), e.metrics
    learned = [e for e in events if e.kind == "episode" and "loss" in e.metrics]
    assert len(learned) >= 2
    assert all(set(STATS) <= set(e.metrics) for e in learned)
    # Each update once: no two events share its statistics.
    stats = [tuple(e.metrics[k] for k in STATS) for e in events if "loss" in e.metrics]
    assert len(set(stats)) == len(stats)
