"""``python main.py bench torch``: the torch learners' training speed on every torch device here (CPU,
CUDA, MPS), side by side with SB3's MaskablePPO in the same run.

For each agent and device, measured side by side in one run:

* ``train``: the whole training loop (``agent.train``) for ``--seconds``: moves played per second (the
  table's figure) and gradient updates per second (``--json``: ``updates_per_s``). DQN and PPO play
  their games on the batched engine with the network on the device; MCTS searches on the CPU (a few
  boards per network call: a GPU's per-call latency loses there) and only its learning phase uses
  the device.
* ``train_cpu``: the same run's moves per CPU-second of this process (``time.process_time``: collection
  and training together, every thread counted; MCTS's worker processes are not), with the ratio to
  ``sb3-maskppo``'s (issue #48's yardstick) where it was measured.
* ``updates``: gradient steps alone for ``--seconds`` on the replay data the ``train`` run gathered
  (DQN: ``_update`` on sampled batches; MCTS: minibatches of its position window).

Ratios of ``train`` and ``updates`` divide by the CPU row of the same agent and kind. Devices torch
does not see are skipped with a note. Counting starts at the first training event after a warm-up
(worker start-up, CUDA context, cuBLAS handles), within the same ``train`` call.
Options (``-o KEY=VALUE``): ``agents`` (``dqn,ppo,mcts,sb3-maskppo``; sb3-maskppo only where
sb3-contrib imports), ``devices`` (default: all available), ``warmup`` seconds (5), ``threads`` (torch
threads during every training run, 1; 0 = torch's own), and any config knob as ``dqn.KNOB=VALUE`` /
``ppo.KNOB=VALUE`` / ``mcts.KNOB=VALUE`` / ``sb3-maskppo.KNOB=VALUE`` (``-o dqn.hidden=1024,1024 -o
dqn.batch_size=1024``: bigger nets favour the GPU). MCTS runs with ``games_per_generation=1`` and
``max_moves=200`` unless told otherwise, so that short runs learn too. ``mcts_batches`` (``1,8``)
measures MCTS once per ``batch_games`` value, side by side (rows ``mcts-b1``, ``mcts-b8``; give
``mcts.games_per_generation`` at least the largest, or a generation has too few games to batch).
"""

from __future__ import annotations

import time
from typing import Any

from agents.threads import cpu_model
from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options, report_info
from studio.progress import ProgressLine

_DEFAULTS: dict[str, dict[str, Any]] = {
    "dqn": {},
    "ppo": {},
    "mcts": {"games_per_generation": 1, "max_moves": 200},
    "sb3-maskppo": {},
}
#: what the moves per CPU-second are compared with
YARDSTICK = "sb3-maskppo"
OPTIONS = {
    # default: all of them, sb3-maskppo where sb3-contrib imports (see _default_agents)
    "agents": Option("names", None, choices=tuple(_DEFAULTS), what="agent"),
    "devices": Option("names", None, what="device"),  # default: every device torch sees here
    "warmup": Option("float", 5.0, 0, 3600),
    "threads": Option("int", 1, 0, 1024),
    "mcts_batches": Option("ints", None, 1, 4096),  # one mcts row per batch_games value
}
#: an mcts row measured at one ``batch_games`` (``mcts_batches``)
_MCTS_BATCH = "mcts-b"


def _agent_name(row: str) -> str:
    """The registered agent a row measures (``mcts-b8`` -> ``mcts``)."""
    return "mcts" if row.startswith(_MCTS_BATCH) else row


def _default_agents() -> list[str]:
    """Every agent of :data:`_DEFAULTS`; the SB3 yardstick only where its packages import."""
    import importlib.util

    names = [n for n in _DEFAULTS if n != YARDSTICK]
    if all(importlib.util.find_spec(m) is not None for m in ("stable_baselines3", "sb3_contrib")):
        names.append(YARDSTICK)
    return names


def _config_changes(extra: dict[str, str], agent: str) -> dict[str, Any]:
    from agents.registry import get_agent_class

    specs = {s.name: s for s in get_agent_class(agent).config_cls.specs()}
    changes = dict(_DEFAULTS[agent])
    for key, text in extra.items():
        prefix, dot, knob = key.partition(".")
        if not dot or prefix != agent:
            continue
        if knob == "device" or knob not in specs:
            raise ValueError(f"bench torch: {agent} has no setting {knob!r}")
        changes[knob] = specs[knob].parse(text)
    return changes


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _train_run(agent: Any, warmup: float, seconds: float) -> tuple[int, int, float, float]:
    """(moves, updates, seconds, CPU-seconds) of one ``agent.train`` call, counted from the first event
    after ``warmup`` seconds (worker start-up, CUDA context, first kernels) to the first event ``seconds``
    after that. The window starts at an event, not at the call: a learner whose first event comes late
    (SB3 sends it after building its model and a whole rollout, seconds on a busy machine) still trains
    for the whole window. A learner with no event for a minute past the window is counted as it stands."""
    from agents.base import Budget, Control

    control = Control()
    t0, c0 = time.perf_counter(), time.process_time()
    start: tuple[int, int, float, float] | None = None
    for _ in agent.train(Budget(seconds=warmup + seconds + 60.0), control):
        now = time.perf_counter()
        if start is None and now - t0 >= warmup:
            _sync(agent.device)
            start = (agent.counters.steps, agent.counters.updates, time.perf_counter(), time.process_time())
        elif start is not None and now - start[2] >= seconds:
            control.stop()
    _sync(agent.device)
    if start is None:  # no event after the warm-up: count the whole call
        start = (0, 0, t0, c0)
    return (
        agent.counters.steps - start[0],
        agent.counters.updates - start[1],
        time.perf_counter() - start[2],
        time.process_time() - start[3],
    )


def _update_run(agent: Any, name: str, seconds: float) -> tuple[int, float]:
    """(gradient steps, seconds) of updates alone on the data the training run gathered."""
    import numpy as np

    if name not in ("dqn", "mcts"):
        return 0, 0.0  # PPO's and SB3's updates need a rollout: measured within ``train`` only
    if name == "dqn":
        if agent._buffer is None or len(agent._buffer) < agent.config.batch_size:
            return 0, 0.0

        def step() -> None:
            agent._update()

    else:
        train_idx, _ = agent.window.split()
        if len(train_idx) == 0:
            return 0, 0.0
        cfg = agent.config
        agent.net.train()

        def step() -> None:
            idx = agent.rng.choice(train_idx, size=min(cfg.batch_size, len(train_idx)), replace=False)
            policy_loss, value_loss = agent._losses(*agent._batch(np.sort(idx), cfg.augment))
            loss = policy_loss + cfg.value_loss_weight * value_loss
            agent.optimizer.zero_grad()
            loss.backward()
            agent.optimizer.step()
            loss.item()  # what training does every step (and a sync point on a GPU)

    n = 0
    t0 = time.perf_counter()
    while True:
        step()
        n += 1
        if n % 8 == 0 and time.perf_counter() - t0 >= seconds:
            break
    _sync(agent.device)
    return n, time.perf_counter() - t0


Best = dict[tuple[str, str, str], tuple[float, dict[str, Any]]]


def torch_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    import torch

    from agents.nn.device import describe_device, resolve_device

    opts = parse_options("torch", options.extra, OPTIONS, prefixes=tuple(_DEFAULTS))
    agents: list[str] = opts["agents"] or _default_agents()
    devices, notes = _devices(opts["devices"])
    changes = {a: _config_changes(options.extra, a) for a in agents}
    if opts["mcts_batches"] and "mcts" in agents:
        rows = [f"{_MCTS_BATCH}{k}" for k in opts["mcts_batches"]]
        for row, k in zip(rows, opts["mcts_batches"]):
            changes[row] = {**changes["mcts"], "batch_games": k}
        at = agents.index("mcts")
        agents[at : at + 1] = rows
    best = _measure(agents, devices, changes, (opts["warmup"], opts["threads"]), options, progress)
    measurements = _measurements(best, agents, devices)
    if not measurements:
        raise ValueError("bench torch: nothing was measured (budget too short for any update?)")
    info = report_info(
        {
            "rounds": options.rounds,
            "seconds_per_round": options.seconds,
            "warmup_s": opts["warmup"],
            "config": {a: changes[a] for a in agents},
        },
        cpu_model=cpu_model(),
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        torch_threads=opts["threads"] or torch.get_num_threads(),
        devices={d: describe_device(resolve_device(d)) for d in devices},
        notes=notes,
    )
    return BenchReport("torch", "per_s", measurements, baseline=None, info=info)


def _devices(asked: list[str] | None) -> tuple[list[str], list[str]]:
    """The asked devices (default: every one torch sees here) that work, and a note per one skipped."""
    import torch

    from agents.nn.device import available_devices, resolve_device

    here = available_devices()
    notes = []
    devices = []
    for d in asked or here:
        try:
            resolve_device(d)
        except ValueError as e:
            notes.append(f"{d} skipped: {e}")
            continue
        devices.append(d)
    for d in ("cuda", "mps"):
        if d not in here and d not in (asked or ()):
            notes.append(f"{d} skipped: torch {torch.__version__} sees no {d.upper()} device")
    if not devices:
        raise ValueError("bench torch: none of the asked devices is available")
    return devices, notes


def _measure(
    agents: list[str],
    devices: list[str],
    changes: dict[str, dict[str, Any]],
    warmup_threads: tuple[float, int],
    options: BenchOptions,
    progress: ProgressLine,
) -> Best:
    """The best rate of each (agent, device, "train" | "train_cpu" | "updates") over the rounds, with its
    details; each round measures every device once (interleaved)."""
    from agents.nn.device import torch_threads
    from agents.registry import get_agent_class

    warmup, threads = warmup_threads

    progress.total = len(agents) * len(devices) * options.rounds
    best: Best = {}

    def offer(key: tuple[str, str, str], rate: float, detail: dict[str, Any]) -> None:
        if key not in best or rate > best[key][0]:
            best[key] = (rate, detail)

    done = 0
    for _round in range(options.rounds):
        for name in agents:
            cls = get_agent_class(_agent_name(name))
            for d in devices:
                agent = cls(cls.config_cls.from_dict({**changes[name], "device": d}), seed=options.seed)
                progress.update(done, f"{name} on {d}: training", force=True)
                # Every learner on the same torch threads (PPO and DQN default to one themselves).
                with torch_threads(threads):
                    moves, updates, elapsed, cpu = _train_run(agent, warmup, options.seconds)
                rate = moves / elapsed
                detail = {
                    "moves_per_s": round(rate, 1),
                    "moves_per_cpu_s": round(moves / max(cpu, 1e-9), 1),
                    "updates_per_s": round(updates / elapsed, 2),
                    "moves": moves,
                    "updates": updates,
                    "elapsed_s": round(elapsed, 2),
                    "cpu_s": round(cpu, 2),
                }
                offer((name, d, "train"), rate, detail)
                offer((name, d, "train_cpu"), moves / max(cpu, 1e-9), detail)
                progress.update(
                    done, f"{name} on {d}: {rate:,.0f} moves/s, {updates / elapsed:,.1f} updates/s"
                )
                n, el = _update_run(agent, _agent_name(name), options.seconds)
                if n:
                    detail = {"updates_per_s": round(n / el, 2), "updates": n, "elapsed_s": round(el, 2)}
                    offer((name, d, "updates"), n / el, detail)
                done += 1
                progress.update(done, f"{name} on {d}: updates alone {n / max(el, 1e-9):,.1f}/s")
    return best


def _measurements(best: Best, agents: list[str], devices: list[str]) -> list[Measurement]:
    """One row per agent, kind and device, with its ratio to the CPU's (moves per CPU-second: to
    :data:`YARDSTICK`'s on the same device)."""
    measurements: list[Measurement] = []
    kinds = (
        ("train", "training moves/s"),
        ("train_cpu", "training moves/CPU-s"),
        ("updates", "gradient updates/s alone"),
    )
    for name in agents:
        for kind, what in kinds:
            for d in devices:
                got = best.get((name, d, kind))
                if got is None:
                    continue
                base = best.get((YARDSTICK, d, kind) if kind == "train_cpu" else (name, "cpu", kind))
                ratio = round(got[0] / base[0], 2) if base is not None and base[0] > 0 else None
                label = f"{name} {what} on {d}"
                measurements.append(Measurement(f"{name}_{kind}_{d}", label, round(got[0], 2), ratio, got[1]))
    return measurements
