"""Schedules for epsilon, learning rate, gamma, ...: a value as a function of a step count (numpy-free).

``Schedule("exponential", start=0.9, rate=0.998)`` is seed 000's epsilon (0.9 x 0.998^episode);
``Schedule("linear", start=1.0, end=0.05, steps=10_000)`` goes from 1.0 to 0.05 in 10,000 steps and
stays there; ``polynomial`` bends the same path with ``power``; ``constant`` is ``start`` forever.
Learners report every schedule they use as a metric of the same name, so the GUI can plot it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCHEDULE_KINDS: tuple[str, ...] = ("constant", "linear", "exponential", "polynomial")


@dataclass(frozen=True)
class Schedule:
    """``value(t)`` for ``t = 0, 1, 2, ...`` (episodes or steps: the caller decides the unit).

    - constant: ``start``
    - linear: ``start`` -> ``end`` over ``steps``, then ``end``
    - polynomial: ``end + (start - end) * (1 - t / steps) ** power`` for ``t < steps``, then ``end``
    - exponential: ``start * rate ** t``, never past ``end`` (``end`` is a floor when ``rate < 1``, a
      ceiling when ``rate > 1``; 0 means no floor for a decay)
    """

    kind: str = "constant"
    start: float = 1.0
    end: float = 0.0
    steps: int = 1
    rate: float = 1.0
    power: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULE_KINDS:
            raise ValueError(f"unknown schedule {self.kind!r}: choose one of {', '.join(SCHEDULE_KINDS)}")
        if self.kind in ("linear", "polynomial") and self.steps < 1:
            raise ValueError(f"a {self.kind} schedule needs steps >= 1, got {self.steps}")
        if self.kind == "exponential" and self.rate <= 0:
            raise ValueError(f"an exponential schedule needs rate > 0, got {self.rate}")
        if self.kind == "polynomial" and self.power <= 0:
            raise ValueError(f"a polynomial schedule needs power > 0, got {self.power}")

    def value(self, t: int | float) -> float:
        t = max(0.0, float(t))
        if self.kind == "constant":
            return float(self.start)
        if self.kind == "exponential":
            try:
                v = self.start * self.rate**t
            except OverflowError:  # a growth schedule run far past any sensible horizon
                v = math.inf
            if self.rate < 1.0:
                return float(max(v, self.end))
            if self.rate > 1.0:
                return float(min(v, self.end)) if self.end > self.start else float(v)
            return float(self.start)
        frac = min(t, float(self.steps)) / float(self.steps)
        power = 1.0 if self.kind == "linear" else self.power
        return float(self.end + (self.start - self.end) * (1.0 - frac) ** power)

    __call__ = value
