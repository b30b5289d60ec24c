"""``TorchAgent``: the part every torch learner shares — encoder + network play, state for checkpoints.

A subclass builds ``self.encoder`` and ``self.net`` in ``__init__`` (after calling ``super().__init__``,
which seeds torch from the agent's seed so that the same seed gives the same initial weights), says how
its optimiser is made in ``_build_optimizer`` (built on first use: see :attr:`TorchAgent.optimizer`),
and lists any extra modules / optimisers / arrays through the ``_state_*`` hooks.
Playing is the same for all: encode the board, run the network, pick the best **legal** output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.base import Agent, Budget, Control, legal_values
from agents.config import AgentConfig
from agents.nn.device import resolve_device
from agents.nn.encoders import BoardEncoder, NTupleEncoder, make_encoder
from agents.nn.masking import masked_argmax, masked_softmax
from agents.nn.networks import NTupleNetwork, build_network
from agents.nn.state import (
    draw_seed,
    load_networks_state,
    load_optimizer_state,
    networks_state,
    numpy_rng_state,
    seed_torch,
    set_numpy_rng_state,
)
from agents.play_only import play_only
from agents.training import TrainTracker
from engine import DIRECTIONS, Direction, Game, Rules
from engine.boards import N_ACTIONS, afterstates, game_exponents, symmetries


def afterstate_values(
    net: nn.Module,
    encoder: BoardEncoder,
    exps_BRC: np.ndarray,
    moves: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """``net`` (one output) on the board each move leads to: ``(ratings (B, 4), merged values (B, 4),
    merges (B, 4))``. Illegal moves leave the board unchanged (callers mask them). ``moves``: the
    :func:`~engine.boards.afterstates` of the boards when already computed."""
    after_BARC, value_BA, merges_BA = moves if moves is not None else afterstates(exps_BRC)
    b, rows, cols = after_BARC.shape[0], after_BARC.shape[2], after_BARC.shape[3]
    v_BA = net(encoder.tensor(after_BARC.reshape(b * N_ACTIONS, rows, cols))).view(b, N_ACTIONS)
    return v_BA, value_BA, merges_BA


class TorchAgent(Agent):
    """Base of the torch learners: one policy / Q network over encoded exponent boards."""

    trainable = True
    #: rate the boards the moves lead to instead of reading four outputs off the board (see head_outputs)
    afterstate_head: bool = False
    #: average the outputs over the board's symmetries when playing (see symmetric_outputs)
    symmetric_play: bool = False
    encoder: BoardEncoder
    net: nn.Module

    def __init__(
        self, config: AgentConfig | None = None, rules: Rules | None = None, seed: int | None = None
    ):
        super().__init__(config, rules, seed)
        self._optimizer: torch.optim.Optimizer | None = None
        #: a loaded optimiser state (arrays, meta) waiting for the optimiser (see set_state)
        self._pending_optimizer: tuple[dict[str, np.ndarray], Mapping[str, Any]] | None = None
        #: where the networks train (the config's ``device`` knob; configs without one: the CPU)
        self.device = resolve_device(getattr(self.config, "device", "cpu"))
        # Weight initialisation draws from torch's global generator: seed it from the agent's own
        # generator so that one agent seed fixes the initial network too.
        seed_torch(draw_seed(self.rng))

    def place_on_device(self) -> None:
        """Move the checkpointed modules and the encoder's output to :attr:`device`.

        Subclasses call it at the end of ``__init__``, after building their networks on the CPU (so that
        the same seed gives the same initial weights on every device) and before any optimiser step.
        """
        for module in self._state_modules().values():
            module.to(self.device)
        if self.device.type != "cpu":
            self.encoder = dataclasses.replace(self.encoder, device=self.device)

    def _build_optimizer(self) -> torch.optim.Optimizer:
        """The optimiser of the agent's networks (each learner says which)."""
        raise NotImplementedError

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimiser, built on first use (a training step, a checkpoint's save or load): building
        one imports ``torch._dynamo``, over a CPU-second that an agent that only plays never needs. An
        optimiser state loaded before it was built is checked and applied now."""
        if self._optimizer is None:
            self._optimizer = self._build_optimizer()
            pending, self._pending_optimizer = self._pending_optimizer, None
            if pending is not None:
                load_optimizer_state(self._optimizer, pending[0], pending[1], "opt/")
        return self._optimizer

    def descend(self, loss: torch.Tensor, grad_clip: float = 0.0) -> None:
        """One optimiser step on ``loss`` (gradient norm clipped to ``grad_clip`` when > 0); counts it."""
        self.optimizer.zero_grad()
        loss.backward()
        if grad_clip > 0:
            nn.utils.clip_grad_norm_(self.net.parameters(), grad_clip)
        self.optimizer.step()
        self.counters.updates += 1

    def tensor(self, array: np.ndarray) -> torch.Tensor:
        """A numpy array as a tensor on :attr:`device` (on the CPU: sharing its memory)."""
        return torch.from_numpy(array).to(self.device)

    def build_net(
        self, encoder: str, planes: int, network: str, hidden: Sequence[int], n_out: int, layout: str = "4x6"
    ) -> None:
        """Set :attr:`encoder` and :attr:`net` (a :func:`~agents.nn.networks.build_network` network for
        this board's encoded shape, ``n_out`` outputs), on the CPU: see :meth:`place_on_device`.

        ``network="ntuple"`` reads its own input, the table rows of the tuple ``layout`` (one of
        :data:`agents.ntuple.agent.LAYOUTS`; ``encoder`` and ``planes`` do not apply): an
        :class:`NTupleEncoder` with an :class:`NTupleNetwork`."""
        if network == "ntuple":
            ntuple = NTupleEncoder(layout)
            ntuple.shape(*self.rules.shape)  # 4x4 boards only: says so otherwise
            self.encoder = ntuple
            self.net = NTupleNetwork(ntuple.size, n_out)
            return
        self.encoder = make_encoder(encoder, planes)
        self.net = build_network(network, self.encoder.shape(*self.rules.shape), n_out, hidden)

    def start_training(self, budget: Budget, control: Control | None) -> TrainTracker:
        """Seed torch (dropout masks) from the agent's generator; the tracker of this train call.

        Torch's generator is global to the process; re-seeding per call keeps a learner deterministic
        even when other code (another agent, the GUI) drew from it in between.
        """
        seed_torch(draw_seed(self.rng))
        return TrainTracker(self.counters, budget, control)

    # ------------------------------------------------------------------ play
    def play_in_train_mode(self) -> bool:
        """Whether play keeps dropout active (seed 000 never switched its networks to eval mode)."""
        return False

    def head_outputs(self, exps_BRC: np.ndarray, net: nn.Module | None = None) -> torch.Tensor:
        """One output per move ``(B, 4)`` from ``net`` (default: ``self.net``), with gradient.

        A plain head reads the board and outputs four numbers. With ``afterstate_head`` the net rates
        the board each move leads to (one output per board), and :meth:`combine_afterstate` turns those
        ratings into the four outputs: the net learns an evaluation function, and which boards the
        moves lead to is computed exactly instead of learned.
        """
        net = self.net if net is None else net
        if not self.afterstate_head:
            return net(self.encoder.tensor(exps_BRC))
        v_BA, value_BA, merges_BA = afterstate_values(net, self.encoder, exps_BRC)
        return self.combine_afterstate(v_BA, value_BA, merges_BA)

    def combine_afterstate(
        self, v_BA: torch.Tensor, value_BA: np.ndarray, merges_BA: np.ndarray
    ) -> torch.Tensor:
        """Outputs from afterstate ratings and each move's merged value / merges (default: the ratings)."""
        return v_BA

    def symmetric_outputs(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """:meth:`head_outputs` averaged over the board's symmetries, each mapped back to its move.

        A net trained on random symmetries is only roughly symmetric; averaging its eight views (four
        on a non-square board) is an ensemble for free at play time.
        """
        syms = symmetries(*exps_BRC.shape[1:])  # all keep the board's shape (no transpose unless square)
        views = np.concatenate([sym.apply(exps_BRC) for sym in syms])
        # one network call over all the views: per-call overhead, not arithmetic, dominates play
        out_SBA = self.head_outputs(views).view(len(syms), exps_BRC.shape[0], N_ACTIONS)
        # Move a on the board is move action_map[a] on its transformed view.
        outs = [out_SBA[i][:, list(sym.action_map)] for i, sym in enumerate(syms)]
        return torch.stack(outs).mean(dim=0)

    @torch.no_grad()
    def play_forward(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """:meth:`head_outputs` in play mode (no gradient, dropout off unless kept on), averaged over
        the board's symmetries when ``symmetric_play`` is set. Leaves the net in play mode."""
        # The net stays in play mode afterwards: every update sets train() itself, and train() walks
        # every submodule, which cost a third of a move's time when done twice per move.
        mode = self.play_in_train_mode()
        if mode != self.net.training:
            self.net.train(mode)
        if self.symmetric_play:
            return self.symmetric_outputs(exps_BRC)
        return self.head_outputs(exps_BRC)

    def network_output(self, exps_BRC: np.ndarray) -> torch.Tensor:
        """One output per move ``(B, 4)`` for exponent boards (Q-values or logits), in play mode."""
        return self.play_forward(exps_BRC)

    def output_to_values(self, out_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
        """What :meth:`move_values` reports for legal moves (Q-values; policies override: probabilities)."""
        return out_BA

    def move_values(self, game: Game) -> dict[Direction, float]:
        mask_A = game.legal_mask()
        out_1A = self.network_output(game_exponents(game)[None])
        values_1A = self.output_to_values(out_1A, self.tensor(mask_A)[None])
        return legal_values(game, values_1A[0].cpu().numpy())

    def act(self, game: Game) -> Direction:
        mask_A = game.legal_mask()
        if not mask_A.any():
            raise ValueError("no legal move: the game is over")
        out_1A = self.network_output(game_exponents(game)[None])
        return DIRECTIONS[int(masked_argmax(out_1A, self.tensor(mask_A)[None])[0])]

    # ------------------------------------------------------------------ state
    def _state_modules(self) -> dict[str, nn.Module]:
        """Modules saved in checkpoints, by array-name prefix."""
        return {"net/": self.net}

    def _state_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"opt/": self.optimizer}

    def _extra_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Subclass arrays / metadata worth keeping (a replay buffer, a game window, ...)."""
        return {}, {}

    def _set_extra_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Inverse of :meth:`_extra_state`."""

    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        arrays, opt_metas = networks_state(self._state_modules(), self._state_optimizers())
        meta: dict[str, Any] = {"optimizers": opt_metas}
        # The numpy generator drives everything random in training (games, exploration, sampling, and
        # the torch seed of each train call): saving it makes a resumed run continue the same streams.
        meta["numpy_rng"] = numpy_rng_state(self.rng)
        extra_arrays, extra_meta = self._extra_state()
        arrays.update(extra_arrays)
        meta["extra"] = extra_meta
        return arrays, meta

    def set_state(self, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Inverse of :meth:`get_state`; ValueError / KeyError saying what does not fit."""
        optimizers = meta.get("optimizers", {})
        extra = meta.get("extra", {})
        for what, value in (("optimizers", optimizers), ("extra", extra)):
            if not isinstance(value, Mapping):
                raise ValueError(f"{what} is a {type(value).__name__}, not an object")
        # A process that only plays never builds the optimiser (the one of _state_optimizers): its
        # state waits for a training step, if one comes.
        defer = play_only() and self._optimizer is None
        load_networks_state(
            self._state_modules(), {} if defer else self._state_optimizers(), arrays, optimizers
        )
        if defer:
            opt_meta = optimizers.get("opt/")
            if opt_meta is not None:
                self._pending_optimizer = (
                    {k: v for k, v in arrays.items() if k.startswith("opt/")},
                    opt_meta,
                )
        if "numpy_rng" in meta:
            set_numpy_rng_state(self.rng, meta["numpy_rng"])
        self._set_extra_state(arrays, extra)


class PolicyNetAgent(TorchAgent):
    """A torch learner whose network outputs move logits: its move values are the legal moves' probabilities."""

    value_kind = "share"

    def output_to_values(self, out_BA: torch.Tensor, mask_BA: torch.Tensor) -> torch.Tensor:
        return masked_softmax(out_BA, mask_BA)
