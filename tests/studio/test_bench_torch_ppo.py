"""``bench torch``: PPO and SB3's MaskablePPO side by side, in moves per CPU-second with the ratio."""

from __future__ import annotations

import json

import pytest

from studio.cli import main


def test_ppo_against_maskable_ppo_per_cpu_second(capsys):
    pytest.importorskip("sb3_contrib")
    args = ["bench", "torch", "--json", "--seconds", "3", "--rounds", "1", "-o", "devices=cpu"]
    args += ["-o", "agents=ppo,sb3-maskppo", "-o", "warmup=0", "-o", "ppo.envs=8", "-o", "ppo.rollout=8"]
    args += ["-o", "ppo.minibatch=32", "-o", "ppo.hidden=16", "-o", "sb3-maskppo.hidden=16"]
    # 3 s and short rollouts: counting starts at a learner's first event, which SB3 sends after its first
    # rollout (2,048 moves by default) and after building its model: a busy machine took over a second
    args += ["-o", "sb3-maskppo.n_steps=32", "-o", "sb3-maskppo.batch_size=32"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    figures = report["results"]
    ppo, sb3 = figures["ppo_train_cpu_cpu"], figures["sb3-maskppo_train_cpu_cpu"]
    assert ppo["moves"] > 0 and ppo["cpu_s"] > 0 and sb3["moves"] > 0
    assert ppo["per_s"] == pytest.approx(ppo["moves_per_cpu_s"], abs=0.1)
    assert ppo["per_s"] == pytest.approx(ppo["moves"] / ppo["cpu_s"], rel=0.05)  # cpu_s is rounded
    # the yardstick is 1x itself; PPO's ratio is its figure over the yardstick's
    assert sb3["ratio"] == 1.0
    assert ppo["ratio"] == pytest.approx(ppo["per_s"] / sb3["per_s"], rel=0.02)
    assert "ppo_updates_cpu" not in figures  # PPO's updates are measured within training only
