"""The review service in parts (issue #46, item 5): an agent declares how it reviews, a calibration is
data, the reviewer box's entries are typed, and a running review hands its worker the review so far.

Before, the review found a search depth by matching setting names ("search_depth", "depth"): an agent
whose depth knob had another name could not review at a depth, and any agent with a "depth" setting
had it overwritten whatever it meant. Now the agent class says which knob it is
(``Agent.review_depth_knob``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from agents import registry
from agents.base import Agent
from agents.config import AgentConfig, knob
from agents.spec import AgentSpec
from engine import Direction, Game
from engine.store import GameStore
from studio.services.review import (
    GameReview,
    Grading,
    Reviewer,
    ReviewerChoice,
    ReviewerTarget,
    grading_of,
    resolve_choice,
    resolve_reviewer,
    review_game,
    reviewer_choices,
    reviewer_options,
    reviewing,
)
from tests.studio.gui_helpers import greedy_game

HERE = "tests.studio.test_review_agent_declares_how_it_reviews"


@dataclass
class PliesConfig(AgentConfig):
    plies: int = knob(1, "how far it looks", low=1, high=5)
    depth: int = knob(4, "a setting that happens to be called depth (not a search depth)", low=1, high=9)


class PliesAgent(Agent):
    """Rates moves in points; its search depth is the knob ``plies``, declared for the review."""

    name = "test_plies"
    config_cls = PliesConfig
    value_kind = "points"
    review_depth_knob: ClassVar[str | None] = "plies"

    def move_values(self, game: Game) -> dict[Direction, float]:
        return {d: 10.0 * self.config.plies + int(d) for d in game.legal_moves()}  # type: ignore[attr-defined]


class NamedDepthAgent(PliesAgent):
    """A setting named ``depth``, but no search depth declared: the review must leave it alone."""

    name = "test_named_depth"
    review_depth_knob = None


@pytest.fixture
def test_agents():
    with registry.registered(
        {"test_plies": f"{HERE}:PliesAgent", "test_named_depth": f"{HERE}:NamedDepthAgent"}
    ):
        yield


def test_the_review_sets_the_depth_knob_the_agent_declares(test_agents) -> None:
    reviewer = Reviewer(AgentSpec(name="test_plies"), 3)
    agent: Any = reviewer.build()
    assert agent.config.plies == 3
    described = reviewer.describe(agent)
    assert described["depth"] == 3 and described["label"] == "test_plies depth 3"
    assert described["value_kind"] == "points" and described["sees_death"] is True  # 3 plies see an end
    own: Any = Reviewer(AgentSpec(name="test_plies")).build()
    assert own.config.plies == 1  # no depth: its own


def test_a_setting_merely_named_depth_is_not_taken_for_a_search_depth(test_agents) -> None:
    with pytest.raises(ValueError, match="test_named_depth has no search depth to set"):
        Reviewer(AgentSpec(name="test_named_depth"), 2).build()
    agent: Any = Reviewer(AgentSpec(name="test_named_depth")).build()
    assert agent.config.depth == 4 and grading_of(agent).sees_death is False


def test_expectimax_and_ntuple_declare_their_depth_and_policy_knobs() -> None:
    expectimax: Any = Reviewer(AgentSpec(name="expectimax", config={"depths_policy": (3, 2)}), 1).agent()
    assert expectimax.config.depth == 1 and expectimax.config.depths_policy == ()  # the policy cleared
    ntuple: Any = Reviewer(AgentSpec(name="ntuple"), 2).agent()
    assert ntuple.config.search_depth == 2 and ntuple.config.depths_policy == ()


def test_a_grading_reads_its_calibration_stored_as_text_or_as_an_object() -> None:
    grading = grading_of(Reviewer(AgentSpec(name="expectimax"), 2).build())
    assert grading.value_kind == "rank" and grading.calibration is not None and grading.sees_death
    stored = grading.to_json()  # what older studios stored: the knots as JSON text
    assert isinstance(stored["calibration"], str)
    assert Grading.from_json(stored) == grading
    as_object = {**stored, "calibration": json.loads(stored["calibration"])}
    assert Grading.from_json(as_object) == grading
    raw = np.array([-50_000.0, 0.0, 10_000.0, np.nan])
    np.testing.assert_array_equal(Grading.from_json(as_object).points(raw), grading.points(raw))
    assert Grading.from_json({"value_kind": "points"}) == Grading("points")
    with pytest.raises(ValueError, match="calibration xs"):
        Grading.from_json({**as_object, "calibration": {"xs": [1.0], "ys": [2.0]}})


def test_the_reviewer_box_entries_are_typed_and_resolve_as_the_tuples_did() -> None:
    options = reviewer_options(None)
    assert options[0] == ReviewerChoice("default", None)
    by_label = {c.label: c.target for c in options}
    assert by_label["expectimax d2"] == ReviewerTarget("expectimax", 2)
    assert (
        resolve_choice(None, by_label["expectimax d2"]).key() == resolve_reviewer(None, "expectimax", 2).key()
    )
    assert resolve_choice(None, None).label == resolve_reviewer(None, None).label
    assert reviewer_choices(None)[:4] == [
        ("default", None),
        ("expectimax d1", ("expectimax", 1)),
        ("expectimax d2", ("expectimax", 2)),
        ("expectimax d3", ("expectimax", 3)),
    ]


def test_a_running_review_hands_the_review_so_far_without_reading_the_store(
    test_agents, data_dir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reviewing, "CHUNK_MOVES", 16)
    monkeypatch.setattr(reviewing, "PARTIAL_SECONDS", 0.0)  # every committed chunk
    with GameStore.open(data_dir) as store:
        gid = greedy_game(store, seed=4, moves=100)
        n = store.get_game(gid).n_moves
        reads: list[int] = []
        real = store.review_values

        def counted(review_id: int) -> np.ndarray:
            reads.append(review_id)
            return real(review_id)

        monkeypatch.setattr(store, "review_values", counted)
        partials: list[GameReview] = []
        final = review_game(store, gid, Reviewer(AgentSpec(name="test_plies")), on_partial=partials.append)
    assert n == 100 and final.complete and len(final.moves) == 100
    assert [len(p.moves) for p in partials] == [16, 32, 48, 64, 80, 96]
    assert all(p.game_id == gid and not p.complete for p in partials)
    assert partials[-1].moves == final.moves[:96]  # the same grades as the finished review's
    assert reads == [reads[0]]  # the stored part read once before the walk, never while it runs
