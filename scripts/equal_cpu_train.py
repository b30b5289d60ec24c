"""Train several agents side by side for the same CPU time: each ``train`` gets ``--cpu-seconds`` of its
process tree's CPU time (start-up included), whatever else shares the machine.

    python scripts/equal_cpu_train.py --cpu-seconds 1800 --work DIR dqn sb3-maskppo sb3-dqn

Each agent trains as ``python main.py --data-dir DIR/AGENT train --agent AGENT --seed S --eval-games 0``
with one math-library thread. Whoever runs more than ``--lead`` CPU-seconds ahead of the slowest is
paused (SIGSTOP) until the others catch up; at the budget each gets SIGINT (Ctrl-C: it saves its final
checkpoint and ends). Prints one JSON line a minute and, at the end, each agent's CPU-seconds and final
checkpoint (``DIR/AGENT/checkpoints/run-1``); ``python main.py eval --checkpoint CK`` then plays them.
Linux only: CPU time is read from /proc.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> float:
    """CPU-seconds (user + system) of process ``root`` and every live descendant, plus the children
    they have waited for."""
    stats: dict[int, list[str]] = {}
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = raw[raw.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
        stats[int(entry)] = fields
        kids.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            f = stats[pid]
            total += sum(int(x) for x in f[11:15]) / TICK  # utime, stime, cutime, cstime
        todo.extend(kids.get(pid, []))
    return total


def signal_tree(root: int, sig: int) -> None:
    subprocess.run(["pkill", f"-{int(sig)}", "-P", str(root)], check=False)
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(root, sig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents", nargs="+", help="agents to train (one run each)")
    ap.add_argument("--cpu-seconds", type=float, required=True, help="CPU-seconds each")
    ap.add_argument("--work", type=Path, required=True, help="a folder: one data dir per agent in it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lead", type=float, default=5.0, help="CPU-seconds one may run ahead (default 5)")
    ap.add_argument("--nice", type=int, default=0, help="niceness of the trainers (default 0)")
    a = ap.parse_args(argv)
    if len(set(a.agents)) != len(a.agents):
        ap.error("each agent once: their runs share nothing but the machine")
    a.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name in a.agents:
        data = a.work / name
        data.mkdir(exist_ok=True)
        cmd = ["nice", "-n", str(a.nice), sys.executable, str(ROOT / "main.py"), "--data-dir", str(data)]
        cmd += ["train", "--agent", name, "--minutes", "1000000", "--seed", str(a.seed), "--eval-games", "0"]
        with open(a.work / f"{name}.log", "wb") as log:
            procs[name] = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    paused: set[str] = set()
    done: dict[str, float] = {}
    t0 = last_line = time.monotonic()
    while len(done) < len(procs):
        time.sleep(0.5)
        cpu = {n: tree_cpu_seconds(p.pid) for n, p in procs.items() if n not in done}
        low = min(cpu.values())
        for name, used in cpu.items():
            pid = procs[name].pid
            if used >= a.cpu_seconds or procs[name].poll() is not None:
                if name in paused:
                    signal_tree(pid, signal.SIGCONT)
                    paused.discard(name)
                signal_tree(pid, signal.SIGINT)
                procs[name].wait()
                done[name] = round(used, 2)
            elif used > low + a.lead and name not in paused:
                signal_tree(pid, signal.SIGSTOP)
                paused.add(name)
            elif used <= low + a.lead / 5 and name in paused:
                signal_tree(pid, signal.SIGCONT)
                paused.discard(name)
        if time.monotonic() - last_line >= 60:
            last_line = time.monotonic()
            line = {"wall": round(last_line - t0), "cpu": {k: round(v) for k, v in cpu.items()}}
            print(json.dumps(line), flush=True)
    result = {
        name: {
            "cpu_seconds": done[name],
            "exit": procs[name].returncode,
            "checkpoints": sorted(str(p) for p in (a.work / name).glob("checkpoints/run-*/*.npz")),
        }
        for name in a.agents
    }
    print(json.dumps({"wall": round(time.monotonic() - t0), "agents": result}), flush=True)
    return 0 if all(r["exit"] == 0 for r in result.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
