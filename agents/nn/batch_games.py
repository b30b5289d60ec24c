"""N training games side by side for the torch learners: one call moves them all.

:func:`training_games` picks the backend. Classic 4x4 rules with one spawn per move run on
:class:`engine.batch.BatchEngine` (:class:`BatchedGames`: every game moves in one jitted call, the
traces are built only when a game ends); any other rules run one :class:`engine.Game` after another
(:class:`LoopGames`, the obviously-correct twin the tests compare the batched one with).

Both backends behave alike to the move: game ``i`` starts as ``Game(seed=s)`` with ``s`` drawn from
the learner's generator (the first ``n`` games in index order, then one per finished game, in index
order within a step), so the same generator and the same moves give the same games, boards, scores
and traces on either backend. Actions must be legal (learners pick from :attr:`TrainingGames.mask`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from agents.nn.state import draw_seed
from engine import Game, Rules
from engine.batch import BatchEngine
from engine.boards import afterstates, game_exponents
from engine.core import Spawn, from_exponents, to_exponents
from engine.records import GameTrace, play_recorded


@dataclass
class Finished:
    """A game that ended on the last step."""

    index: int
    score: int
    max_tile: int
    moves: int
    trace: GameTrace | None

    def metrics(self) -> dict[str, float]:
        """The standard figures of the game's ``episode`` event (agents.metrics)."""
        return {"score": self.score, "max_tile": self.max_tile, "moves": self.moves}


@dataclass
class StepOut:
    """What one step of all games did. ``next_NRC`` / ``next_mask_NA`` are the boards the moves reached
    (the terminal board, with no legal move, for games that ended: :attr:`TrainingGames.obs` already
    shows their successors)."""

    reward_N: npt.NDArray[np.int64]
    done_N: npt.NDArray[np.bool_]
    next_NRC: npt.NDArray[np.uint8]
    next_mask_NA: npt.NDArray[np.bool_]
    finished: list[Finished]


#: ``(Spawn(r, c, v),)`` for a 4x4 board by code ``(4 r + c) * 2 + (v == 4)``
_SPAWNS = tuple((Spawn(k // 2 // 4, k // 2 % 4, 4 if k % 2 else 2),) for k in range(32))


class TrainingGames:
    """Common face of the two backends: ``obs`` (N, R, C) exponents, ``mask`` (N, 4), :meth:`step`."""

    n: int
    rules: Rules
    obs: npt.NDArray[np.uint8]
    mask: npt.NDArray[np.bool_]
    #: each game's seed (that of the game now running in slot i)
    seeds: list[int]

    def step(self, actions_N: npt.NDArray[np.int64]) -> StepOut:
        raise NotImplementedError

    def board(self, i: int) -> npt.NDArray[np.int64]:
        """Game ``i``'s board now (tile values), for live displays."""
        return from_exponents(self.obs[i])


def batched_rules(rules: Rules) -> bool:
    """Whether :class:`BatchedGames` runs these rules (4x4, one spawn per move, a non-empty start)."""
    return rules.is_classic_shape and rules.spawn_per_move == 1 and rules.start_tiles >= 1


def training_games(
    n: int, rules: Rules, rng: np.random.Generator, *, keep_traces: bool = True, batched: bool | None = None
) -> TrainingGames:
    """``n`` games on the fastest backend for ``rules`` (``batched=False`` forces the loop twin)."""
    if batched is None:
        batched = batched_rules(rules)
    if batched:
        return BatchedGames(n, rules, rng, keep_traces=keep_traces)
    return LoopGames(n, rules, rng, keep_traces=keep_traces)


class LoopGames(TrainingGames):
    """One :class:`engine.Game` per slot, moved one after another (any rules)."""

    def __init__(self, n: int, rules: Rules, rng: np.random.Generator, *, keep_traces: bool = True) -> None:
        self.n, self.rules, self._rng, self._keep = int(n), rules, rng, keep_traces
        self.seeds = [draw_seed(rng) for _ in range(self.n)]
        self._games = [Game(seed=s, rules=rules) for s in self.seeds]
        self._traces = [GameTrace.start(g) if keep_traces else None for g in self._games]
        self.obs = np.stack([game_exponents(g) for g in self._games])
        self.mask = np.stack([g.legal_mask() for g in self._games])

    def step(self, actions_N: npt.NDArray[np.int64]) -> StepOut:
        reward = np.zeros(self.n, np.int64)
        done = np.zeros(self.n, bool)
        next_obs = np.empty_like(self.obs)
        next_mask = np.empty_like(self.mask)
        finished: list[Finished] = []
        for i, game in enumerate(self._games):
            trace = self._traces[i]
            a = int(actions_N[i])
            result = play_recorded(game, a, trace) if trace is not None else game.step(a)
            reward[i] = result.reward
            done[i] = result.game_over
            next_obs[i] = game_exponents(game)
            next_mask[i] = game.legal_mask()
        obs, mask = next_obs.copy(), next_mask.copy()
        for i in map(int, np.flatnonzero(done)):
            g = self._games[i]
            finished.append(Finished(i, g.score, g.max_tile, g.moves, self._traces[i]))
            self.seeds[i] = draw_seed(self._rng)
            g = self._games[i] = Game(seed=self.seeds[i], rules=self.rules)
            self._traces[i] = GameTrace.start(g) if self._keep else None
            obs[i] = game_exponents(g)
            mask[i] = g.legal_mask()
        self.obs, self.mask = obs, mask
        return StepOut(reward, done, next_obs, next_mask, finished)

    def board(self, i: int) -> npt.NDArray[np.int64]:
        return self._games[i].board


class BatchedGames(TrainingGames):
    """The games on one :class:`BatchEngine`. Each step's boards, moves and rewards are kept (a few
    bytes per move) until the games they belong to end; a game's :class:`GameTrace` is built then,
    its spawns read off the difference between each move's afterstate and the next board."""

    def __init__(self, n: int, rules: Rules, rng: np.random.Generator, *, keep_traces: bool = True) -> None:
        if not batched_rules(rules):
            raise ValueError(f"BatchedGames runs 4x4 rules with one spawn per move, got {rules}")
        self.n, self.rules, self._rng, self._keep = int(n), rules, rng, keep_traces
        self._eng = BatchEngine(self.n, seed=0, rules=rules)
        self.seeds = [0] * self.n
        for i in range(self.n):
            self._start_game(i)
        self.obs = self._eng.observation()
        self.mask = self._eng.legal_mask()
        self._t = 0  # steps made so far
        self._base = 0  # step number of row 0 of the kept steps
        self._start = np.zeros(self.n, np.int64)  # step number each running game started at
        # Kept steps, one row per step (row j is step base + j): a game's moves are one slice.
        self._h_obs = np.zeros((64, self.n, *rules.shape), np.uint8)
        self._h_act = np.zeros((64, self.n), np.int8)
        self._h_rew = np.zeros((64, self.n), np.int64)

    def _start_game(self, i: int) -> Game:
        """Put a fresh ``Game(seed=s)`` in slot ``i`` (``s`` from the learner's generator)."""
        self.seeds[i] = draw_seed(self._rng)
        g = Game(seed=self.seeds[i], rules=self.rules)
        self._eng.set_game(i, g.board, rng_state=g.rng_state)
        return g

    def step(self, actions_N: npt.NDArray[np.int64]) -> StepOut:
        actions = np.array(actions_N, dtype=np.int64)  # a copy: kept for the traces
        before = self.obs
        obs, reward, done, mask = self._eng.step(actions)
        if self._eng.last_illegal.any():
            bad = int(np.flatnonzero(self._eng.last_illegal)[0])
            raise ValueError(f"game {bad}: move {int(actions[bad])} is illegal on its board")
        if self._keep:
            self._keep_step(before, actions, reward)
        self._t += 1
        next_obs, next_mask = obs.copy(), mask.copy()
        finished: list[Finished] = []
        if done.any():
            scores, moves, tiles = (
                self._eng.episode_scores,
                self._eng.episode_moves,
                self._eng.episode_max_tiles,
            )
            for i in map(int, np.flatnonzero(done)):
                final = self._eng.final_observation(i)
                next_obs[i] = final
                next_mask[i] = False
                trace = self._trace(i, final) if self._keep else None
                finished.append(Finished(i, int(scores[i]), int(tiles[i]), int(moves[i]), trace))
                g = self._start_game(i)
                obs[i] = to_exponents(g.board)
                mask[i] = g.legal_mask()
                self._start[i] = self._t
        self.obs, self.mask = obs, mask
        return StepOut(reward, done, next_obs, next_mask, finished)

    def _keep_step(
        self,
        obs_NRC: npt.NDArray[np.uint8],
        actions_N: npt.NDArray[np.int64],
        reward_N: npt.NDArray[np.int64],
    ) -> None:
        """Row ``t - base`` of the kept steps; full rows first drop the steps no running game needs,
        then double."""
        row = self._t - self._base
        if row == len(self._h_act):
            drop = int(self._start.min()) - self._base
            keep = row - drop
            if keep * 2 > len(self._h_act):  # less than half freed: grow
                grow = len(self._h_act)
                self._h_obs = np.concatenate([self._h_obs, np.zeros_like(self._h_obs[:grow])])
                self._h_act = np.concatenate([self._h_act, np.zeros_like(self._h_act[:grow])])
                self._h_rew = np.concatenate([self._h_rew, np.zeros_like(self._h_rew[:grow])])
            for h in (self._h_obs, self._h_act, self._h_rew):
                h[:keep] = h[drop:row]
            self._base += drop
            row = keep
        self._h_obs[row] = obs_NRC
        self._h_act[row] = actions_N
        self._h_rew[row] = reward_N

    def _trace(self, i: int, final_RC: npt.NDArray[np.uint8]) -> GameTrace:
        """Game ``i``'s trace, from its kept steps and its terminal board (exponents)."""
        k0, k1 = int(self._start[i]) - self._base, self._t - self._base
        exps_LRC = self._h_obs[k0:k1, i]
        acts_L = self._h_act[k0:k1, i].astype(np.int64)
        rews_L = self._h_rew[k0:k1, i]
        n = len(acts_L)
        after_LRC = afterstates(exps_LRC)[0][np.arange(n), acts_L]
        next_LRC = np.concatenate([exps_LRC[1:], final_RC[None]])
        # One spawn per move: the one cell empty after the slide and filled on the next board.
        ls, rs, cs = np.nonzero((after_LRC == 0) & (next_LRC != 0))
        if len(ls) != n:
            raise AssertionError(f"game {i}: {len(ls)} spawns found for {n} moves")
        # Spawns are immutable and few (cell x value): one shared tuple each, looked up by code.
        codes_L = (rs * 4 + cs) * 2 + (next_LRC[ls, rs, cs] == 2)
        spawns: list[tuple[Spawn, ...]] = [_SPAWNS[k] for k in codes_L.tolist()]
        values_LRC = from_exponents(exps_LRC)
        return GameTrace(
            rules=self.rules,
            seed=self.seeds[i],
            initial_board=values_LRC[0].copy(),
            layouts=list(values_LRC),
            moves=acts_L.tolist(),
            rewards=rews_L.tolist(),
            scores=np.cumsum(rews_L).tolist(),
            spawns=spawns,
            final_board=from_exponents(final_RC),
        )

    def board(self, i: int) -> npt.NDArray[np.int64]:
        return from_exponents(self.obs[i])
