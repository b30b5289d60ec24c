"""Game review: every move of a logged game graded by a strong agent, stored, resumable. Qt-free.

What a review is (the unit, grades, losses and accuracy) is in :mod:`agents.review`; this package picks
the reviewer, walks a game's positions, stores the reviewer's raw values chunk by chunk
(:mod:`engine.store.reviews`) and hands back a :class:`GameReview`. The window (Replay), the live
coach (Play), Progress and the ``review`` / ``progress`` commands all go through the functions here, so
the same game and reviewer give the same figures everywhere.

* :func:`default_reviewer` — **the one default reviewer** (the rule, as the README states it): the
  store's strongest n-tuple network (each n-tuple run offers its best evaluated checkpoint with its
  evaluation score, or, never evaluated, its last checkpoint with the run's last mean score; the
  highest wins, a tie goes to the newer run) with 2-ply search; when the store has none (or the game is
  not a 4x4 one-spawn game, which n-tuple networks do not play), heuristic expectimax at depth 2 with
  its values mapped to points by its calibration. A fallback, or a network whose games score under
  :data:`STRONG_SCORE`, carries a ``fallback`` note that every front end shows with the review; one
  that :func:`prepare_reviewer` trained (``review --prepare-reviewer``, the Replay tab's "Prepare a
  reviewer") becomes the default once it is the strongest.
* :func:`resolve_reviewer` — **the one choice of who reviews**, used by every front end: the default
  (at another depth when asked), or a named reviewer (``--reviewer``, the reviewer boxes): a registry
  name or a checkpoint file (one of the store's networks named as the default names it).
  Only reviewers whose values are points (n-tuple networks) or that have a calibration (expectimax)
  grade; others are refused with the reason.
* :func:`review_game` — review one game: a stored complete review comes back without building the
  reviewer; an unfinished one goes on from where it stopped (a kill keeps every committed chunk);
  ``progress(done, total)`` and ``should_stop()`` let a worker thread report and cancel.
* :func:`review_games` — several games with one reviewer built once (``review --since``).
* :func:`grade_played` — one position and the move played: the live coach's badge.

Whose moves: every move names its player (:attr:`agents.review.MoveGrade.player`); in a game the
person played in (alone or with agents under Watch) only the person's moves count in the accuracy and
the grade counts, the agents' are graded but marked not counted; a game without the person counts every
move.

The parts, each a module of this package (every name below is importable from the package itself):

* :mod:`.identity` — which reviewer (:class:`Reviewer`) and the key its stored reviews are found by;
* :mod:`.calibration` — the stored calibrations (shipped and the data dir's) by search depth;
  :mod:`.fit` fits one (``review --calibrate``);
* :mod:`.grading` — how a reviewer's values become points (:class:`Grading`, stored with every
  review), one position graded (:func:`grade_played`), a stored review graded (:func:`grade_stored`);
* :mod:`.choosing` — the default reviewer, a named one, and what a window offers
  (:func:`reviewer_options`, typed; :func:`reviewer_choices`, the same as tuples for the reviewer boxes);
* :mod:`.reviewing` — reviewing games and reading stored reviews; :mod:`.results` — :class:`GameReview`;
* :mod:`.prepare` — training a reviewer.

How an agent reviews is its own declaration (:attr:`agents.base.Agent.review_depth_knob` and
``review_policy_knob``: the settings a review at a given search depth changes), not found by its
settings' names.
"""

from __future__ import annotations

from agents.review import grade_record as grades_of
from agents.review import review_subject as subject_of

from .calibration import (
    CALIBRATION_FILE,
    CALIBRATIONS_FOLDER,
    DEFAULT_DEPTH,
    calibration_for,
    calibrations_dir,
    load_calibrations,
    own_depths,
    shipped_depths,
)
from .choosing import (
    CRITIC_RUNS_SCANNED,
    DEFAULT_RULE,
    STRONG_SCORE,
    CriticReviewer,
    Network,
    PlayNetwork,
    ReviewerChoice,
    ReviewerTarget,
    critic_reviewers,
    default_reviewer,
    ntuple_candidates,
    play_networks,
    plugin_reviewers,
    resolve_choice,
    resolve_reviewer,
    reviewer_choices,
    reviewer_options,
)
from .fit import calibrate, calibration_refusal
from .grading import (
    PHASE_FLOORS,
    PHASES,
    UNIT,
    GradedGame,
    Grading,
    ReviewerFault,
    checked_points,
    grade_played,
    grade_stored,
    grading_info,
    grading_of,
    phase_of,
    position_values,
    to_points,
)
from .identity import Reviewer, file_digest
from .prepare import PREPARE_MINUTES, prepare_request, prepare_reviewer
from .results import GameReview, game_review
from .reviewing import (
    CHUNK_MOVES,
    CHUNK_SECONDS,
    OnPartial,
    Progress,
    ShouldStop,
    earlier_default_review,
    review_by_key,
    review_game,
    review_games,
    stored_review,
)

__all__ = [
    "CALIBRATIONS_FOLDER",
    "CALIBRATION_FILE",
    "CHUNK_MOVES",
    "CHUNK_SECONDS",
    "CRITIC_RUNS_SCANNED",
    "DEFAULT_DEPTH",
    "DEFAULT_RULE",
    "PHASES",
    "PHASE_FLOORS",
    "PREPARE_MINUTES",
    "STRONG_SCORE",
    "UNIT",
    "CriticReviewer",
    "GameReview",
    "GradedGame",
    "Grading",
    "Network",
    "OnPartial",
    "PlayNetwork",
    "Progress",
    "Reviewer",
    "ReviewerChoice",
    "ReviewerFault",
    "ReviewerTarget",
    "ShouldStop",
    "calibrate",
    "calibration_for",
    "calibration_refusal",
    "calibrations_dir",
    "checked_points",
    "critic_reviewers",
    "default_reviewer",
    "earlier_default_review",
    "file_digest",
    "game_review",
    "grade_played",
    "grade_stored",
    "grades_of",
    "grading_info",
    "grading_of",
    "load_calibrations",
    "ntuple_candidates",
    "own_depths",
    "phase_of",
    "play_networks",
    "plugin_reviewers",
    "position_values",
    "prepare_request",
    "prepare_reviewer",
    "resolve_choice",
    "resolve_reviewer",
    "review_by_key",
    "review_game",
    "review_games",
    "reviewer_choices",
    "reviewer_options",
    "shipped_depths",
    "stored_review",
    "subject_of",
    "to_points",
]
