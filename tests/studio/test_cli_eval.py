"""``python main.py eval``: threads of the in-process worker, play settings (``--set``), the jitted loop
(``--fast``, ``--threads``) and the rest of what scripts/eval_checkpoint.py and eval_ntuple.py did."""

from __future__ import annotations

import json

import pytest

from agents.threads import THREAD_ENV_VARS
from studio.cli import main


def test_one_worker_pins_this_process_to_its_share(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The games play in this process: torch, numba and the OpenMP/MKL variables get the worker's share,
    # as each process of a pool does (a share of 1 here, so that it differs from torch's default).
    import torch

    import studio.commands.eval as eval_command

    for var in THREAD_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(eval_command, "cpu_share", lambda workers: 1)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main(["eval", "--agent", "dqn", "--games", "1", "--workers", "1", "--no-log", "--json"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    (report,) = json.loads(capsys.readouterr().out)["results"][0]["worker_threads"]
    assert report["torch"] == 1 and report["numba"] in (None, 1)
    assert all(report[var] == "1" for var in THREAD_ENV_VARS)
