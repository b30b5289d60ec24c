"""The one parser of a reviewer's calibration (issue 47): every value that becomes a count, an index, a
knot or a weight is finite and in range, or the calibration is refused in one line naming the field.

Before, ``"games": 1e999`` (JSON reads it as inf) reached ``int(inf)``: an OverflowError that
``values_in_points`` did not catch, so imitation's ``skip_graded`` filter and ``review_by_key`` failed
on an imported review; a floor of 1e300 (above every knot) made every move worth 0 points, every move
"best"; a depth key "²" passed ``str.isdigit`` and failed in ``int()``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.review import (
    MAX_COUNT,
    MAX_POINTS,
    MAX_RAW,
    Calibration,
    grading_refusal,
    parse_calibration,
    parse_depths,
    values_in_points,
)

GOOD = {
    "xs": [-1000.0, 0.0, 1000.0],
    "ys": [100.0, 2000.0, 5000.0],
    "floor": -5000.0,
    "games": 3,
    "positions": 300,
}
FIELDS = ("xs", "ys", "floor", "games", "positions", "xs[0]", "xs[2]", "ys[0]", "ys[2]")

#: Anything a hostile file may hold: every float (NaN, ±inf, 1e308, subnormals), ints of any size,
#: bools, text, null, lists and objects.
hostile = st.recursive(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**400), max_value=10**400),
        st.sampled_from([1e300, -1e300, 1e16, 5e-324, 0.0, -0.0, 2**53 + 1, 10**13]),
        st.booleans(),
        st.none(),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


def _with(field: str, value: object) -> dict[str, object]:
    obj = json.loads(json.dumps(GOOD))
    if "[" in field:
        name, index = field[:-1].split("[")
        obj[name][int(index)] = value
    else:
        obj[field] = value
    return obj


def _sound(cal: Calibration) -> None:
    """What an accepted calibration promises: finite knots in range, a floor below them, counts in
    range, and finite points for any finite raw value within ±MAX_RAW."""
    assert 2 <= len(cal.xs) == len(cal.ys)
    assert all(math.isfinite(x) and abs(x) <= MAX_RAW for x in cal.xs)
    assert all(math.isfinite(y) and 0 <= y <= MAX_POINTS for y in cal.ys)
    assert all(b > a for a, b in zip(cal.xs, cal.xs[1:], strict=False))
    assert cal.floor < cal.xs[0]
    assert 0 <= cal.games <= MAX_COUNT and 0 <= cal.positions <= MAX_COUNT
    pts = cal.points(np.array([-MAX_RAW, cal.xs[0], cal.xs[-1], MAX_RAW, 0.0]))
    assert np.isfinite(pts).all() and (pts >= 0).all()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=hostile)
def test_any_hostile_field_is_accepted_sound_or_refused_in_one_line(field: str, value: object) -> None:
    obj = _with(field, value)
    try:
        cal = parse_calibration(obj)
    except ValueError as e:
        text = str(e)
        assert "\n" not in text and text.startswith("calibration")
        base = field.split("[")[0]
        assert base in text or "xs" in text or "floor" in text, text  # the field (or what it broke) named
    else:
        _sound(cal)
    # as text, the way a stored review carries it (JSON with inf / nan / huge numbers)
    text = json.dumps(obj, default=str)
    try:
        _sound(parse_calibration(text))
    except ValueError as e:
        assert "\n" not in str(e)
    raw = np.array([[0.0, 1.0, np.nan, 2.0]])
    pts = values_in_points(raw, {"value_kind": "rank", "calibration": text})  # never an exception
    assert pts.shape == (1, 4)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"xs": [0, 1], "ys": [1, 2], "games": 1e999}', "games"),
        ('{"xs": [0, 1], "ys": [1, 2], "positions": 1e400}', "positions"),
        ('{"xs": [0, 1], "ys": [1, 2], "games": 2.5}', "games"),
        ('{"xs": [0, 1], "ys": [1, 2], "floor": 1e300}', "floor"),
        ('{"xs": [0, 1], "ys": [1, 2], "floor": 0}', "floor"),  # at the first knot: refused too
        ('{"xs": [0, 1e999], "ys": [1, 2]}', "xs[1]"),
        ('{"xs": [0, 1], "ys": [1, 1e308]}', "ys[1]"),
        ('{"xs": [0, 5e-324], "ys": [0, 1e12]}', "slope"),
        ('{"xs": [0, 1], "ys": [2, 1]}', "ys"),
        ('{"xs": [1, 1], "ys": [1, 2]}', "xs"),
        ('{"xs": [0, true], "ys": [1, 2]}', "xs[1]"),
        ('{"xs": [0, "1"], "ys": [1, 2]}', "xs[1]"),
        ('{"xs": [0, 1], "ys": [1, 2, 3]}', "length"),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_the_reported_values_are_refused_naming_the_field(text: str, field: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_calibration(text)
    assert field in str(e.value) and "\n" not in str(e.value)
    # a stored review carrying it grades nothing and says why, instead of an OverflowError
    info = {"value_kind": "rank", "calibration": text, "label": "expectimax"}
    assert np.isnan(values_in_points(np.array([[1.0, 2.0, 3.0, 4.0]]), info)).all()
    assert field in (grading_refusal(info) or "")


def test_a_floor_of_1e300_no_longer_grades_every_move_best() -> None:
    with pytest.raises(
        ValueError, match="floor must be a finite number in \\[-1e\\+15, 1e\\+15\\], got 1e\\+300"
    ):
        parse_calibration({"xs": [0.0, 1000.0], "ys": [0.0, 5000.0], "floor": 1e300})
    # in range but above every knot: every raw value would be worth 0 points, every move tied "best"
    with pytest.raises(ValueError, match=r"floor must be below the first knot xs\[0\] = 0\.0, got 2000\.0"):
        parse_calibration({"xs": [0.0, 1000.0], "ys": [0.0, 5000.0], "floor": 2000.0})


@pytest.mark.parametrize("key", ["²", "0", "21", "-1", "1.5", "", "٣", "002"])
def test_depth_keys_are_ascii_whole_numbers_in_range(key: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_depths({key: GOOD}, "cal.json")
    assert str(e.value).startswith("cal.json: depth") and "invalid literal" not in str(e.value)


def test_a_sound_calibration_reads_back_exactly() -> None:
    cal = parse_calibration(GOOD)
    assert cal == Calibration((-1000.0, 0.0, 1000.0), (100.0, 2000.0, 5000.0), -5000.0, 3, 300)
    assert parse_calibration(json.dumps(cal.to_json())) == cal == Calibration.from_json(cal.to_json())
    assert parse_depths({"2": GOOD, "12": GOOD}) == {2: cal, 12: cal}
    assert cal.points([0.0, -3000.0, -6000.0]).tolist() == [
        2000.0,
        50.0,
        0.0,
    ]  # half-way from the floor to xs[0]: half of ys[0]
