"""Prints how many cases each fuzz door ran (``python -m pytest tests/fuzz -q -n 0``)."""

from __future__ import annotations

from tests.fuzz.common import FUZZ_COUNTS


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if FUZZ_COUNTS:
        rows = ", ".join(f"{door} {n}" for door, n in sorted(FUZZ_COUNTS.items()))
        terminalreporter.write_line(f"fuzz cases per door: {rows}")
