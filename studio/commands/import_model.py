"""``python main.py import-model FILE.zip [--agent sb3-ppo] [--out PATH]``: a model trained elsewhere.

Reads a Stable-Baselines3 / sb3-contrib ``model.save()`` zip (PPO, A2C, DQN, MaskablePPO) without
unpickling anything (:mod:`agents.sb3.importer`), and saves it as a studio checkpoint, by default
``DATA/checkpoints/imported/<file name>.npz``, whose path it prints: Play, the Arena, ``eval`` and
review take it like a checkpoint trained here. A file that does not fit (another algorithm or policy,
other spaces, a pickle where JSON belongs, no ``policy.pth``) is refused in one line, exit status 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from studio.cli import CliError

HELP = "import an SB3 model (model.save() zip: PPO, A2C, DQN, MaskablePPO) as a studio checkpoint"
AGENTS = ("sb3-ppo", "sb3-a2c", "sb3-dqn", "sb3-maskppo")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "import-model",
        help=HELP,
        description=HELP + ". Nothing in the file is unpickled: the weights are read with "
        "torch.load(weights_only=True), the rest from the zip's plain JSON. Prints the checkpoint's path.",
    )
    p.add_argument("file", metavar="FILE.zip", help="the zip that SB3's model.save() wrote")
    p.add_argument(
        "--agent",
        choices=AGENTS,
        default=None,
        help="the studio agent it becomes (default: the one its policy names; a PPO model may become sb3-maskppo)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="PATH",
        help="where to write the checkpoint (default: DATA/checkpoints/imported/)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from agents.sb3.importer import import_sb3_model
    except ImportError as e:  # the optional extra is missing: its one line
        raise CliError(str(e)) from None
    agent = import_sb3_model(args.file, args.agent)  # ModelImportError is a ValueError: one line, exit 2
    path = Path(args.out) if args.out else _free_path(args.data_dir, Path(args.file).stem)
    saved = agent.save(path)
    print(saved)
    return 0


def _free_path(data_dir: str | None, stem: str) -> Path:
    """``DATA/checkpoints/imported/<stem>.npz``, or ``<stem>-2.npz`` ... when that one exists."""
    from engine.fsutil import path_under
    from engine.paths import checkpoints_dir

    folder = path_under(checkpoints_dir(data_dir), "imported")
    folder.mkdir(exist_ok=True)
    path = path_under(folder, f"{stem}.npz")
    n = 2
    while path.exists():
        path = path_under(folder, f"{stem}-{n}.npz")
        n += 1
    return path
