"""The torch tests' shared fixture, loaded with ``pytest_plugins = ("tests.agents.torch_fixtures",)`` and
asked for with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """One torch thread for the test (the count before it is restored after): the tests' timing does not
    depend on what else shares the machine's cores."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
