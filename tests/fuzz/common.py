"""The fuzz suite's shared settings: hostile input at every door (CLI arguments, imported game files,
checkpoint metadata). The property everywhere: a clean exit (0) or a one-line refusal (exit 2, or the
door's own error type), no traceback, and nothing written on a refusal.

``FUZZ`` decorates every fuzz test. Its case count is ``FUZZ_EXAMPLES`` (default 40, so CI stays
quick); a deep run: ``FUZZ_EXAMPLES=2000 python -m pytest tests/fuzz -q -n 0`` (the summary line
then gives the cases per door). Each test calls ``count(door)`` once per case.
"""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, settings

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,  # cases start databases and processes; time is not the property
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

#: door name -> cases run in this process.
FUZZ_COUNTS: Counter[str] = Counter()


def count(door: str) -> None:
    FUZZ_COUNTS[door] += 1
