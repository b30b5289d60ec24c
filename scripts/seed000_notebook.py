"""Seed 000's DQN notebook run as written: does its "2,794 over 1,000 games" reproduce?

    python scripts/seed000_notebook.py --seeds 5            # about 4 minutes a seed on one core
    python scripts/seed000_notebook.py --seeds 1 --episodes 100 --eval-games 100   # a quick look

The notebook is read from the seed file at run time (``--seed-file``, default
``../shared/seeds/000_*.txt``): its cells (imports, QNetworkSimple, Board, ReplayBuffer, the variables,
the training loop, evaluate_model, evaluate_random_actions) are cut out by line range into a temporary
program, unchanged except for: ``device`` forced to the CPU, ``import pygame`` dropped (only its GUI cell
uses it), and two counting lines in the evaluation (directions chosen, scores) that touch no random
stream. A thin wrapper seeds ``random``, ``numpy`` and ``torch`` with the run's seed and uses one torch
thread. Each seed trains the notebook's 1,000 episodes and plays its 1,000 evaluation games; the random
player is run once. One JSON line per run, then a summary. Compare with the studio's own replica:
``python main.py sweep --preset dqn-seed000 --point "" --seeds 5 --seed 1 --eval-games 1000 --workers 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(path: Path) -> str:
    """The notebook's cells by line range, with the wrapper described above."""
    lines = path.read_text().split("\n")
    if "Average accuracy of the QNetworkSimple model across 1,000 games: 2794.344" not in lines[677]:
        raise SystemExit(f"{path}: not the seed 000 notebook this script knows (line 678 differs)")

    def cell(a: int, b: int) -> str:  # 1-based, inclusive
        return "\n".join(lines[a - 1 : b]) + "\n"

    imports = cell(4, 12)  # line 13 'import pygame' dropped (only used by GUI cell)
    device_cell = cell(36, 37)
    qnet = cell(40, 52)
    board = cell(129, 307)
    rbuf = cell(438, 451)
    variables = cell(458, 469)
    train = cell(482, 569)
    evalm = cell(582, 607)
    evalr = cell(614, 632)  # line 634 'scores = evaluate_random_actions()' called from wrapper instead
    assert evalr.startswith("from game import Board")
    evalr = evalr.replace(
        "from game import Board\n",
        '# from game import Board   # (dump: module "game" not in dump; Board above is used)\n',
        1,
    )
    # instrumentation of evaluate_model (no RNG / logic change): count chosen directions, record scores
    a = "            game.move_tiles(chosen_action)\n"
    assert evalm.count(a) == 1
    evalm = evalm.replace(a, a + "            _EVAL_MOVES[chosen_action] += 1  # [instrumentation]\n")
    b = "        total_score += game.score\n"
    assert evalm.count(b) == 1
    evalm = evalm.replace(b, b + "        _EVAL_SCORES.append(game.score)  # [instrumentation]\n")
    assert evalr.count(b) == 1
    evalr = evalr.replace(b, b + "        _EVAL_SCORES.append(game.score)  # [instrumentation]\n")
    dc = (
        device_cell.replace("\ndevice = ", "\n# device = ", 1)
        + 'device = "cpu"  # [wrapper] forced cpu per brief\n'
    )

    out = f"""# Extracted from {path} (see build.py for line ranges). Wrapper lines are marked [wrapper].
import argparse, json, time, sys, collections  # [wrapper]
{imports}
_ap = argparse.ArgumentParser()  # [wrapper]
_ap.add_argument('--seed', type=int, default=0)
_ap.add_argument('--episodes', type=int, default=None)
_ap.add_argument('--eval_games', type=int, default=1000)
_ap.add_argument('--random_only', action='store_true')
_ap.add_argument('--out', default=None)
args = _ap.parse_args()
torch.set_num_threads(1)  # [wrapper]
random.seed(args.seed); np.random.seed(args.seed); torch.manual_seed(args.seed)  # [wrapper]
_EVAL_MOVES = collections.Counter({{'u': 0, 'd': 0, 'l': 0, 'r': 0}})  # [wrapper]
_EVAL_SCORES = []  # [wrapper]

{dc}
{qnet}
{board}
{rbuf}
{evalm}
{evalr}
def _emit(rec):  # [wrapper]
    line = json.dumps(rec)
    print(line, flush=True)
    if args.out:
        with open(args.out, 'a') as f:
            f.write(line + '\\n')

if args.random_only:  # [wrapper]
    _t0 = time.time()
    _tiles = evaluate_random_actions(args.eval_games)
    _emit({{'seed': args.seed, 'kind': 'random', 'n_games': args.eval_games,
           'mean_score': sum(_EVAL_SCORES) / len(_EVAL_SCORES), 'tiles': dict(sorted(collections.Counter(_tiles).items())),
           'seconds': time.time() - _t0}})
    sys.exit(0)

{variables}
if args.episodes is not None:  # [wrapper] only for the cost-estimate run
    num_episodes = args.episodes
_t0 = time.time()  # [wrapper]
{train}
train_seconds = time.time() - _t0  # [wrapper]
_t1 = time.time()
top_scores = evaluate_model(args.eval_games)
eval_seconds = time.time() - _t1
_n = sum(_EVAL_MOVES.values())
_emit({{'seed': args.seed, 'kind': 'dqn', 'episodes': num_episodes, 'n_games': args.eval_games,
       'mean_score': sum(_EVAL_SCORES) / len(_EVAL_SCORES),
       'std_score_games': float(np.std(_EVAL_SCORES)),
       'tiles': dict(sorted(collections.Counter(top_scores).items())),
       'dir_frac': {{k: _EVAL_MOVES[k] / _n for k in 'udlr'}},
       'eval_moves': _n,
       'train_seconds': train_seconds, 'eval_seconds': eval_seconds,
       'train_last100_mean': float(np.mean(all_scores[-100:])),
       'final_epsilon': epsilon}})
"""
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = sorted((ROOT.parent / "shared" / "seeds").glob("000_*.txt"))
    parser.add_argument("--seed-file", type=Path, default=default[0] if default else None)
    parser.add_argument("--seeds", type=int, default=5, help="runs with seeds 1..N")
    parser.add_argument("--episodes", type=int, help="fewer training episodes than the notebook's 1,000")
    parser.add_argument("--eval-games", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.seed_file is None or not args.seed_file.exists():
        parser.error("no seed 000 file: pass --seed-file PATH")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    means = []
    with tempfile.TemporaryDirectory(prefix="seed000-") as tmp:
        program = Path(tmp) / "nb.py"
        program.write_text(build(args.seed_file))
        runs = [["--seed", str(s)] for s in range(1, args.seeds + 1)] + [["--seed", "0", "--random_only"]]
        for extra in runs:
            cmd = [sys.executable, str(program), *extra, "--eval_games", str(args.eval_games)]
            if args.episodes:
                cmd += ["--episodes", str(args.episodes)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tmp)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(row), flush=True)
            if row["kind"] == "dqn":
                means.append(row["mean_score"])
    summary = {"seeds": len(means), "mean": round(statistics.mean(means), 1), "published": 2794.344}
    if len(means) > 1:
        summary["std"] = round(statistics.stdev(means), 1)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
