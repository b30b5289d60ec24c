"""Imitation (behaviour cloning): learn to play like the games logged in the store.

The config's filters pick games (source, the agent that played them, minimum score, dates); each move
of those games is a labelled example ``board -> move``. A policy network is trained with cross-entropy
on the move taken, over the **legal** moves only (the mask is part of the input to the loss: the net
never spends capacity on ruling out illegal moves). Whole games go to the validation split, so no
position of a validation game is seen in training. Afterwards the agent plays the most probable
legal move, like any other agent; its checkpoint holds the network.

Training counts one pass over the training data (an epoch) as an episode and one example as a step,
so ``--episodes 20`` trains 20 epochs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from agents.base import Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import state_ints
from agents.config import AgentConfig, ConfigError, knob
from agents.metrics import GAMES, LOSS, LR, VAL_LOSS, MetricInfo, counter
from agents.nn.agent import PolicyNetAgent
from agents.nn.device import device_knob
from agents.nn.encoders import ENCODERS, check_encoder_fits
from agents.nn.masking import masked_argmax, masked_log_softmax
from agents.review import BLUNDER, INACCURACY, MISTAKE, grade_record
from engine import Rules, to_exponents
from engine.boards import N_ACTIONS, augment_batch, legal_masks, symmetries

if TYPE_CHECKING:
    import os

    from engine.store import GameStore
    from engine.store.model import GameRecord, GameSummary

SOURCE_CHOICES = ("any", "human", "agent", "evaluation", "training", "imported")
#: ``skip_graded``: leave out moves graded at least this bad by a stored review ("none": keep all)
SKIP_CHOICES = ("none", "mistake", "inaccuracy")
#: the grades each ``skip_graded`` choice leaves out
SKIPPED_GRADES: dict[str, tuple[str, ...]] = {
    "none": (),
    "mistake": (MISTAKE, BLUNDER),
    "inaccuracy": (INACCURACY, MISTAKE, BLUNDER),
}


@dataclass
class ImitationConfig(AgentConfig):
    """Which logged games to learn from, and how."""

    source: str = knob(
        "any", "games of this source only (human, agent, evaluation, ...)", choices=SOURCE_CHOICES
    )
    teacher: str = knob("", "games played by this agent only (e.g. expectimax); empty = any player")
    min_score: int = knob(0, "games with at least this final score", low=0, high=10**9)
    since: str = knob("", "games started on or after this date (YYYY-MM-DD); empty = no limit")
    until: str = knob("", "games started on or before this date (YYYY-MM-DD); empty = no limit")
    max_games: int = knob(
        0, "use at most this many games (the newest); 0 = all that match", low=0, high=10**9
    )
    skip_graded: str = knob(
        "none",
        "leave out the moves a stored review of their game graded this bad or worse (mistake: mistakes "
        "and blunders; inaccuracy: inaccuracies too), by the game's most recent complete review of any "
        "reviewer; games never reviewed (or not to the end) are kept whole; none = keep every move",
        choices=SKIP_CHOICES,
    )
    head: str = knob(
        "afterstate",
        "moves: four logits read off the board; afterstate: the net scores the board each move leads to (it learns an evaluation function, as the teacher's)",
        choices=("moves", "afterstate"),
    )
    network: str = knob("mlp", "policy network", choices=("policy", "mlp", "conv", "cnn"))
    hidden: tuple[int, ...] = knob(
        (256, 256), "hidden widths of the mlp network (cnn: filters, head width)", low=1, high=4096
    )
    encoder: str = knob("onehot", "board encoding", choices=ENCODERS)
    planes: int = knob(16, "one-hot planes", low=2, high=32)
    lr: float = knob(1e-3, "Adam learning rate", low=1e-7, high=1.0, log=True)
    weight_decay: float = knob(0.0, "Adam weight decay (L2)", low=0.0, high=1.0)
    batch_size: int = knob(256, "examples per gradient step", low=1, high=65536)
    val_frac: float = knob(0.1, "share of the games held out for validation", low=0.0, high=0.9)
    symmetric_play: bool = knob(
        False,
        "play by the net's outputs averaged over the board symmetries (for symmetric teachers, with augment)",
    )
    augment: bool = knob(
        False,
        "train on random board symmetries too (for symmetric teachers such as expectimax; a human's corner habit would be blurred)",
    )
    device: str = device_knob()

    def validate(self) -> None:
        check_encoder_fits(self.network, self.encoder)
        for name in ("since", "until"):
            text = getattr(self, name).strip()
            if text:
                import datetime as dt

                try:
                    dt.datetime.fromisoformat(text)
                except ValueError:
                    raise ConfigError(name, f"{text!r} is not a date: use YYYY-MM-DD") from None


@dataclass
class Dataset:
    """Examples from logged games: exponent boards, moves, legal masks, and the game each came from."""

    exps_NRC: np.ndarray
    moves_N: np.ndarray
    masks_NA: np.ndarray
    game_N: np.ndarray  # index into game_ids
    game_ids: list[int]
    skipped: int  # examples dropped because the logged move was not legal on the logged board

    def subset(self, sel_N: np.ndarray) -> Dataset:
        return Dataset(
            self.exps_NRC[sel_N],
            self.moves_N[sel_N],
            self.masks_NA[sel_N],
            self.game_N[sel_N],
            self.game_ids,
            0,
        )

    def __len__(self) -> int:
        return len(self.moves_N)


def describe_filters(cfg: ImitationConfig) -> str:
    parts = [f"source={cfg.source}"]
    if cfg.teacher:
        parts.append(f"teacher={cfg.teacher}")
    if cfg.min_score:
        parts.append(f"min_score={cfg.min_score}")
    if cfg.since:
        parts.append(f"since={cfg.since}")
    if cfg.until:
        parts.append(f"until={cfg.until}")
    if cfg.skip_graded != "none":
        parts.append(f"skip_graded={cfg.skip_graded}")
    return ", ".join(parts)


def graded_keep(store: GameStore, record: GameRecord, skip_graded: str) -> np.ndarray | None:
    """(n,) bool: the moves of ``record`` that its review does not grade in ``skip_graded``'s grades
    (:data:`SKIPPED_GRADES`); None (keep every move) when the filter is off or the game has no
    complete stored review. The review is the most recently updated one that covers every move, by
    any reviewer; its grades follow from the stored values as a game review computes them
    (:func:`agents.review.grade_record`)."""
    bad = SKIPPED_GRADES.get(skip_graded, ())
    n = int(record.n_moves)
    if not bad or n == 0:
        return None
    info = next((r for r in store.list_reviews(record.id) if r.reviewed >= n), None)
    if info is None:
        return None
    values = store.review_values(info.id)
    if len(values) < n:  # a damaged review: trust none of it
        return None
    return np.array([g.grade not in bad for g in grade_record(record, values[:n], info.reviewer)], dtype=bool)


def _has_complete_review(store: GameStore, summary: GameSummary) -> bool:
    return any(r.reviewed >= summary.n_moves for r in store.list_reviews(summary.id))


def _selected_games(store: GameStore, cfg: ImitationConfig, rules: Rules) -> list[GameSummary]:
    """Summaries of the games the filters select that this board can learn from, newest first."""
    summaries = store.list_games(
        source="imported" if cfg.source == "imported" else None,
        played_by=None if cfg.source in ("any", "imported") else cfg.source,
        agent=cfg.teacher or None,
        min_score=cfg.min_score or None,
        since=cfg.since or None,
        until=cfg.until or None,
    )
    return [s for s in summaries if s.n_moves > 0 and s.rules.shape == rules.shape]


#: Games shared by several players whose moves :func:`count_examples` counts one by one (loading them);
#: past this many, a shared game counts whole (an upper bound), so that counting stays cheap.
COUNT_LOADS_AT_MOST = 200


def count_examples(
    cfg: ImitationConfig, rules: Rules, data_dir: str | os.PathLike[str] | None = None
) -> tuple[int, int]:
    """(games, moves) the config's filters select for training on this board, without loading the data.

    As :func:`load_dataset` picks them (``max_games`` newest, the moves of the chosen player only),
    from the games' summaries; a game shared by several players is loaded to count its player's moves
    (up to :data:`COUNT_LOADS_AT_MOST` of them). With ``skip_graded`` on, every game with a complete
    review is loaded and the moves its review leaves out are not counted (what remains is). Moves found
    illegal on their logged board, which training skips, are counted.
    """
    from engine.store import GameStore

    kind = None if cfg.source in ("any", "imported") else cfg.source
    teacher = cfg.teacher or None
    games = moves = loads = 0
    with GameStore.open(data_dir) as store:
        for s in _selected_games(store, cfg, rules):
            if cfg.max_games and games >= cfg.max_games:
                break
            n = s.n_moves
            if cfg.skip_graded != "none" and _has_complete_review(store, s):
                # a reviewed game is always loaded: the moves its review leaves out are not counted
                record = store.load_game(s.id)
                pick = record.moves_by(kind, teacher)
                keep = graded_keep(store, record, cfg.skip_graded)
                n = int((pick if keep is None else pick & keep).sum())
            elif len(s.players) > 1 and (kind or teacher) and loads < COUNT_LOADS_AT_MOST:
                loads += 1
                n = int(store.load_game(s.id).moves_by(kind, teacher).sum())
            if n:
                games += 1
                moves += n
    return games, moves


def _no_games_message(cfg: ImitationConfig, rules: Rules, where: object) -> str:
    return (
        f"no logged {rules.rows}x{rules.cols} games with moves match the filters ({describe_filters(cfg)}) "
        f"in {where}: play or evaluate some games first, or loosen the filters"
    )


def load_dataset(
    cfg: ImitationConfig, rules: Rules, data_dir: str | os.PathLike[str] | None = None
) -> Dataset:
    """The examples of every logged game the config's filters select (ValueError when there is none).

    Moves are selected by who made them: ``source="human"`` takes the person's moves, also those of
    games the person shared with an agent (source ``mixed``), and never the agent's; ``teacher`` takes
    that agent's moves only. ``source="imported"`` takes the games read from files. ``skip_graded``
    leaves out the moves a game's stored review graded that bad or worse (:func:`graded_keep`).
    """
    from engine.store import GameStore

    kind = None if cfg.source in ("any", "imported") else cfg.source
    teacher = cfg.teacher or None
    with GameStore.open(data_dir) as store:
        summaries = _selected_games(store, cfg, rules)
        records: list[GameRecord] = []
        picks: list[np.ndarray] = []
        for s in summaries:
            if cfg.max_games and len(records) >= cfg.max_games:
                break
            record = store.load_game(s.id)
            pick = record.moves_by(kind, teacher)
            keep = graded_keep(store, record, cfg.skip_graded)
            if keep is not None:
                pick = pick & keep
            if pick.any():
                records.append(record)
                picks.append(pick)
        if not records:
            raise ValueError(_no_games_message(cfg, rules, store.path))
    exps = np.concatenate(
        [
            to_exponents(r.layouts[p].reshape(-1, rules.cols)).reshape(-1, *rules.shape)
            for r, p in zip(records, picks)
        ]
    )
    moves = np.concatenate([r.moves[p].astype(np.int64) for r, p in zip(records, picks)])
    game = np.concatenate([np.full(int(p.sum()), k, dtype=np.int64) for k, p in enumerate(picks)])
    masks = legal_masks(exps)
    ok = masks[np.arange(len(moves)), moves]
    return Dataset(exps[ok], moves[ok], masks[ok], game[ok], [r.id for r in records], int((~ok).sum()))


class ImitationAgent(PolicyNetAgent):
    """Behaviour cloning from logged games (humans, agents, evaluations)."""

    name = "imitation"
    smoke_config: ClassVar[Mapping[str, Any]] = {"hidden": (64, 32), "batch_size": 128}
    config_cls = ImitationConfig
    description = (
        "Imitation: a policy network trained to play the moves of logged games (one epoch = one episode)."
    )
    metrics = (
        LOSS,
        VAL_LOSS,
        MetricInfo(
            "accuracy", "Accuracy", group="Accuracy", kind="evaluation", help="moves matched, training set"
        ),
        MetricInfo("val_accuracy", "Validation accuracy", group="Accuracy", kind="evaluation"),
        LR,
        GAMES,
        counter("examples", "positions to learn from"),
    )
    config: ImitationConfig

    def __init__(
        self, config: ImitationConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        cfg = self.config
        self.afterstate_head = cfg.head == "afterstate"
        self.symmetric_play = cfg.symmetric_play
        n_out = 1 if self.afterstate_head else N_ACTIONS
        self.build_net(cfg.encoder, cfg.planes, cfg.network, cfg.hidden, n_out)
        self.place_on_device()
        self.val_game_ids: list[int] | None = None  # fixed at the first train call, kept in checkpoints

    def _build_optimizer(self) -> torch.optim.Optimizer:
        cfg = self.config
        return torch.optim.Adam(self.net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    # ------------------------------------------------------------------ data
    def split(self, data: Dataset) -> tuple[Dataset, Dataset]:
        """Whole games to validation (the same games again when a run resumes)."""
        ids = np.asarray(data.game_ids)
        if self.val_game_ids is None:
            n_val = round(self.config.val_frac * len(ids))
            if self.config.val_frac > 0 and len(ids) >= 2:
                n_val = min(max(n_val, 1), len(ids) - 1)
            else:
                n_val = 0
            self.val_game_ids = sorted(int(i) for i in self.rng.choice(ids, size=n_val, replace=False))
        val_games = np.isin(ids, self.val_game_ids)
        val_N = val_games[data.game_N]
        return data.subset(~val_N), data.subset(val_N)

    # ------------------------------------------------------------------ learning
    def _loss(
        self, exps_BRC: np.ndarray, moves_B: np.ndarray, masks_BA: np.ndarray
    ) -> tuple[torch.Tensor, int]:
        logits_BA = self.head_outputs(exps_BRC)
        mask_BA = self.tensor(masks_BA)
        moves_t = self.tensor(moves_B)
        loss = F.nll_loss(masked_log_softmax(logits_BA, mask_BA), moves_t)
        correct = int((masked_argmax(logits_BA.detach(), mask_BA) == moves_t).sum())
        return loss, correct

    @torch.no_grad()
    def evaluate(self, data: Dataset, batch: int = 4096) -> tuple[float, float]:
        """(mean cross-entropy, accuracy) of the current net on ``data``."""
        if len(data) == 0:
            return float("nan"), float("nan")
        self.net.eval()
        total, correct = 0.0, 0
        for s in range(0, len(data), batch):
            sl = slice(s, s + batch)
            loss, c = self._loss(data.exps_NRC[sl], data.moves_N[sl], data.masks_NA[sl])
            total += loss.item() * len(data.moves_N[sl])
            correct += c
        return total / len(data), correct / len(data)

    def check_can_train(self, context: TrainContext | None) -> None:
        """No run is made when the filters select no game: there would be nothing to learn from."""
        from engine.store import GameStore

        with GameStore.open(context.data_dir if context is not None else None) as store:
            if not _selected_games(store, self.config, self.rules):
                raise ConfigError("source", _no_games_message(self.config, self.rules, store.path))

    def train(
        self, budget: Budget, control: Control | None = None, context: TrainContext | None = None
    ) -> Iterator[MetricEvent]:
        cfg = self.config
        tracker = self.start_training(budget, control)
        data = load_dataset(cfg, self.rules, context.data_dir if context is not None else None)
        train_set, val_set = self.split(data)
        if len(train_set) == 0:
            raise ValueError("every selected game went to validation: lower val_frac or select more games")
        syms = symmetries(*self.rules.shape)
        message = (
            f"{len(data.game_ids)} games ({describe_filters(cfg)}): {len(train_set)} training and "
            f"{len(val_set)} validation examples"
            + (f"; {data.skipped} moves skipped (not legal on their logged board)" if data.skipped else "")
        )
        yield tracker.event("info", {"games": len(data.game_ids), "examples": len(data)}, message=message)
        n = len(train_set)
        while tracker.proceed():
            order = self.rng.permutation(n)
            total, correct, seen = 0.0, 0, 0
            self.net.train()
            stopped = False
            for s in range(0, n, cfg.batch_size):
                if s > 0 and not tracker.proceed():
                    stopped = True
                    break
                idx = order[s : s + cfg.batch_size]
                exps, moves, masks = train_set.exps_NRC[idx], train_set.moves_N[idx], train_set.masks_NA[idx]
                if cfg.augment and len(syms) > 1:
                    exps, moves, aug_masks = augment_batch(exps, moves, masks, self.rng, syms)
                    masks = aug_masks if aug_masks is not None else masks
                loss, c = self._loss(exps, moves, masks)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.counters.updates += 1
                self.counters.steps += len(idx)
                total += loss.item() * len(idx)
                correct += c
                seen += len(idx)
            if stopped:
                break
            self.counters.episodes += 1
            val_loss, val_acc = self.evaluate(val_set)
            metrics = {
                "loss": total / max(seen, 1),
                "accuracy": correct / max(seen, 1),
                "lr": cfg.lr,
                "steps_per_s": tracker.steps_per_s(),
            }
            if len(val_set):
                metrics.update(val_loss=val_loss, val_accuracy=val_acc)
            yield tracker.event("update", metrics)
        tracker.clock.tick()

    # ------------------------------------------------------------------ state
    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {}, {"val_game_ids": self.val_game_ids}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        self.val_game_ids = state_ints(meta, "val_game_ids")
