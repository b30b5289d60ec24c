"""Agent configs: typed dataclasses whose field metadata drives the GUI form, the CLI flags and presets.

Declare a knob once::

    @dataclass
    class DQNConfig(AgentConfig):
        lr: float = knob(5e-5, "Adam learning rate", low=1e-7, high=1.0, log=True)
        network: str = knob("simple", "Q-network architecture", choices=("simple", "dropout", "conv"))
        depths_policy: tuple[int, ...] = knob((3, 3, 2, 2), "search depth by free cells", low=0, high=8)

Supported field types: ``int``, ``float``, ``bool``, ``str`` (free text or ``choices``) and
``tuple[int, ...]`` / ``tuple[float, ...]`` (written ``3,3,2,2`` on the command line and in forms).
Everything about a knob (type, default, range, choices, help) lives in that one declaration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

#: How the words of knob names read in a label (``lr`` -> "learning rate", ``tc`` -> "temporal
#: coherence"): a knob without its own ``label`` is named for a newcomer from these.
LABEL_WORDS: dict[str, str] = {
    "lr": "learning rate",
    "lam": "trace decay λ",
    "tc": "temporal coherence",
    "td": "TD",
    "eps": "exploration",
    "epsilon": "exploration",
    "gamma": "discount γ",
    "alpha": "α",
    "c": "c",
    "n": "n-",
    "nn": "nneonneo heuristic:",
    "puct": "PUCT",
    "tt": "transposition table",
    "se": "squeeze-excite",
    "s4": "classic heuristic:",
    "val": "validation",
    "frac": "fraction",
    "prob": "probability",
    "envs": "environments",
    "grad": "gradient",
    "eval": "evaluation",
    "semi": "semi-",
}


#: Whole knob names whose words alone would mislead.
LABEL_NAMES: dict[str, str] = {
    "lr_gamma": "learning rate step factor",
    "c_puct": "exploration constant (PUCT)",
    "hidden": "hidden units",
    "planes": "input planes",
    "head": "output head",
    "transposition": "transposition table",
    "depth": "search depth",
    "tt_bits": "transposition table size (bits)",
}


def default_label(name: str) -> str:
    """A readable label for knob ``name``: ``lr`` -> "Learning rate", ``n_step`` -> "N-step",
    ``tc`` -> "Temporal coherence", ``eps_decay`` -> "Exploration decay"."""
    if name in LABEL_NAMES:
        return LABEL_NAMES[name][:1].upper() + LABEL_NAMES[name][1:]
    words = [LABEL_WORDS.get(w, w) for w in name.split("_") if w]
    text = ""
    for w in words:
        text += w if (not text or text.endswith("-")) else " " + w
    text = text.rstrip("-")
    return text[:1].upper() + text[1:] if text else name


def knob(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[Any, ...] | None = None,
    log: bool = False,
    step: float | None = None,
    label: str | None = None,
    advanced: bool = False,
) -> Any:
    """A config field with its default, one line of help, and its allowed range or choices.

    ``low``/``high`` are inclusive bounds (for tuples: bounds on every element); ``log`` hints that a
    form should step the value geometrically (learning rates); ``advanced`` fields may be folded away.
    """
    meta = {
        "help": help,
        "low": low,
        "high": high,
        "choices": tuple(choices) if choices is not None else None,
        "log": log,
        "step": step,
        "label": label,
        "advanced": advanced,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not allowed in configs: use a tuple")
    return dataclasses.field(default=default, metadata=meta)


def same_knob(config_cls: type[AgentConfig], name: str, default: Any) -> Any:
    """Knob ``name`` of ``config_cls`` with another default: a subclass that only changes a default
    keeps the help, range and label in the one declaration it inherits."""
    for f in dataclasses.fields(config_cls):
        if f.name == name:
            return knob(default, **f.metadata)
    raise AttributeError(f"{config_cls.__name__} has no knob {name!r}")


class ConfigError(ValueError):
    """A config value outside its declared range or choices; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class FieldSpec:
    """Everything a form or a CLI needs to know about one knob."""

    name: str
    kind: str  # "int" | "float" | "bool" | "str" | "int_tuple" | "float_tuple"
    default: Any
    help: str
    low: float | None
    high: float | None
    choices: tuple[Any, ...] | None
    log: bool
    step: float | None
    label: str
    advanced: bool

    def parse(self, text: str) -> Any:
        """Text (from a CLI flag or a line edit) -> a typed value; ConfigError when it does not parse."""
        t = text.strip()
        try:
            if self.kind == "int":
                return int(t)
            if self.kind == "float":
                return float(t)
            if self.kind == "bool":
                low = t.lower()
                if low in ("1", "true", "yes", "on", "y"):
                    return True
                if low in ("0", "false", "no", "off", "n"):
                    return False
                raise ValueError(t)
            if self.kind == "int_tuple":
                return tuple(int(x) for x in t.replace(" ", "").strip("()[]").split(",") if x != "")
            if self.kind == "float_tuple":
                return tuple(float(x) for x in t.replace(" ", "").strip("()[]").split(",") if x != "")
            return t
        except ValueError:
            raise ConfigError(self.name, f"cannot read {text!r} as {self.kind.replace('_', ' ')}") from None

    def format(self, value: Any) -> str:
        if self.kind.endswith("_tuple"):
            return ",".join(str(v) for v in value)
        return str(value)

    def check(self, value: Any) -> Any:
        """Return the value coerced to the field's type, or raise ConfigError naming the allowed range."""
        v = value
        if self.kind == "bool":
            if not isinstance(v, bool):
                raise ConfigError(self.name, f"must be true or false, got {value!r}")
        elif self.kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                if isinstance(v, float) and v.is_integer():
                    v = int(v)
                else:
                    raise ConfigError(self.name, f"must be a whole number, got {value!r}")
        elif self.kind == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(self.name, f"must be a number, got {value!r}")
            try:
                v = float(v)
            except OverflowError:  # a whole number past any float (10**400)
                raise ConfigError(self.name, "must be a finite number, got a number too large") from None
        elif self.kind == "str":
            if not isinstance(v, str):
                raise ConfigError(self.name, f"must be text, got {value!r}")
        else:
            if not isinstance(v, (tuple, list)):
                raise ConfigError(self.name, f"must be a list of numbers like 3,3,2, got {value!r}")
            elem = int if self.kind == "int_tuple" else float
            try:
                v = tuple(elem(x) for x in v)
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(self.name, f"must be a list of numbers, got {value!r}") from None
        if self.choices is not None and v not in self.choices:
            raise ConfigError(self.name, f"must be one of {', '.join(map(str, self.choices))}; got {v!r}")
        items = v if isinstance(v, tuple) else (v,)
        if self.kind in ("int", "float", "int_tuple", "float_tuple"):
            for x in items:
                if self.low is not None and x < self.low:
                    raise ConfigError(
                        self.name, f"must be in [{_fmt(self.low)}, {_fmt(self.high)}]; got {_fmt(x)}"
                    )
                if self.high is not None and x > self.high:
                    raise ConfigError(
                        self.name, f"must be in [{_fmt(self.low)}, {_fmt(self.high)}]; got {_fmt(x)}"
                    )
                # nan passes every range check (each comparison is False), inf passes an open one, and
                # a whole number past 64 bits overflows numpy and SQLite: none is a setting.
                if isinstance(x, float) and not math.isfinite(x):
                    raise ConfigError(self.name, f"must be a finite number, got {_fmt(x)}")
                if isinstance(x, int) and not -(2**63) < x < 2**63:
                    raise ConfigError(self.name, f"must fit in 64 bits, got {x}")
        return v


def _fmt(x: float | None) -> str:
    if x is None:
        return "∞"
    return f"{x:g}" if isinstance(x, float) else str(x)


def _kind_of(tp: Any) -> str:
    if tp is bool:
        return "bool"
    if tp is int:
        return "int"
    if tp is float:
        return "float"
    if tp is str:
        return "str"
    origin = typing.get_origin(tp)
    if origin is tuple:
        args = typing.get_args(tp)
        if args and args[0] is int:
            return "int_tuple"
        if args and args[0] is float:
            return "float_tuple"
    raise TypeError(f"unsupported config field type {tp!r}")


@dataclass
class AgentConfig:
    """Base of every agent config. Subclasses are plain dataclasses whose fields are made with :func:`knob`.

    Instances validate themselves on creation: ``DQNConfig(lr=-1)`` raises ConfigError("lr: must be in ...").
    """

    _specs_cache: ClassVar[dict[type, tuple[FieldSpec, ...]]] = {}

    def __post_init__(self) -> None:
        for spec in self.specs():
            object.__setattr__(self, spec.name, spec.check(getattr(self, spec.name)))
        self.validate()

    def validate(self) -> None:
        """Cross-field checks; override and raise ConfigError(field, reason)."""

    @classmethod
    def specs(cls) -> tuple[FieldSpec, ...]:
        if cls not in AgentConfig._specs_cache:
            hints = typing.get_type_hints(cls)
            out = []
            for f in dataclasses.fields(cls):
                if f.name.startswith("_"):
                    continue
                md = f.metadata
                out.append(
                    FieldSpec(
                        name=f.name,
                        kind=_kind_of(hints[f.name]),
                        default=f.default,
                        help=md.get("help", ""),
                        low=md.get("low"),
                        high=md.get("high"),
                        choices=md.get("choices"),
                        log=bool(md.get("log", False)),
                        step=md.get("step"),
                        label=md.get("label") or default_label(f.name),
                        advanced=bool(md.get("advanced", False)),
                    )
                )
            AgentConfig._specs_cache[cls] = tuple(out)
        return AgentConfig._specs_cache[cls]

    @classmethod
    def spec(cls, name: str) -> FieldSpec:
        for s in cls.specs():
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            s.name: (list(v) if isinstance(v := getattr(self, s.name), tuple) else v) for s in self.specs()
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, strict: bool = True) -> Self:
        """Build from a dict (a preset, a checkpoint). Unknown keys are an error when ``strict``."""
        names = {s.name for s in cls.specs()}
        unknown = sorted(set(data) - names)
        if unknown and strict:
            raise ConfigError(
                unknown[0], f"is not a setting of this agent (known: {', '.join(sorted(names))})"
            )
        kwargs = {}
        for s in cls.specs():
            if s.name in data:
                v = data[s.name]
                kwargs[s.name] = tuple(v) if s.kind.endswith("_tuple") and isinstance(v, list) else v
        return cls(**kwargs)

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


# ------------------------------------------------------------------------------------------------ CLI


def add_config_arguments(parser: argparse.ArgumentParser, config_cls: type[AgentConfig]) -> None:
    """Add one ``--field-name`` flag per knob (default None = keep the config/preset value)."""
    group = parser.add_argument_group(f"{config_cls.__name__} settings")
    for s in config_cls.specs():
        rng = ""
        if s.choices:
            rng = f" (one of {', '.join(map(str, s.choices))})"
        elif s.low is not None or s.high is not None:
            rng = f" (range {_fmt(s.low)}..{_fmt(s.high)})"
        group.add_argument(
            "--" + s.name.replace("_", "-"),
            dest=f"cfg_{s.name}",
            default=None,
            metavar=s.kind.upper().replace("_TUPLE", ",..."),
            help=f"{s.label}: {s.help}{rng}; default {s.format(s.default)}",
        )


def config_overrides(args: argparse.Namespace, config_cls: type[AgentConfig]) -> dict[str, Any]:
    """The knobs given on the command line, parsed to their types (ConfigError on bad text)."""
    out: dict[str, Any] = {}
    for s in config_cls.specs():
        text = getattr(args, f"cfg_{s.name}", None)
        if text is not None:
            out[s.name] = s.parse(text)
    return out


# --------------------------------------------------------------------------------------------- presets


def presets_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "resources" / "presets"


def list_presets(agent: str | None = None) -> list[str]:
    """Preset names (file stems in ``resources/presets``), optionally only those for ``agent``."""
    out = []
    for p in sorted(presets_dir().glob("*.json")):
        try:
            preset = load_preset(p.stem)
        except ValueError:  # a damaged preset file is refused when named, never takes a listing down
            continue
        if agent is None or preset["agent"] == agent:
            out.append(p.stem)
    return out


#: A preset is a few hundred bytes of JSON; a larger file is not one (and is not read whole).
MAX_PRESET_BYTES = 1 << 20


def load_preset(name: str) -> dict[str, Any]:
    """A preset file: ``{"agent": ..., "description": ..., "config": {...}, "rules": {...}, "budget": {...}}``.

    Every part is checked here (ValueError with one line naming the file and the part), so that the
    window and ``train --preset`` never meet a preset of the wrong shape further in.
    """
    path = Path(name)
    if not path.suffix:
        path = presets_dir() / f"{name}.json"
    if not path.exists():
        known = ", ".join(p.stem for p in sorted(presets_dir().glob("*.json")))
        raise ValueError(f"no preset {name!r} (known: {known or 'none'})")
    if not path.is_file():
        raise ValueError(f"preset {path.name} is not a file")
    if path.stat().st_size > MAX_PRESET_BYTES:
        raise ValueError(f"preset {path.name} is larger than {MAX_PRESET_BYTES:,} bytes: not a preset")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        why = (
            e.msg
            if isinstance(e, json.JSONDecodeError)
            else "not UTF-8 JSON"
            if isinstance(e, UnicodeDecodeError)
            else "nested too deeply"
        )
        raise ValueError(f"preset {path.name} is not valid JSON: {why}") from None
    _check_preset(data, path.name)
    data.setdefault("name", path.stem)  # so that whoever applies it can say which one it was
    return data


def _check_preset(data: Any, label: str) -> None:
    """The shape of a preset: ValueError naming the part that is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("agent"), str):
        raise ValueError(f"preset {label} must be an object with 'agent' (text) and 'config'")
    for key in ("description", "name"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"preset {label}: {key} must be text")
    for key in ("config", "rules", "budget"):
        if not isinstance(data.get(key, {}), dict):
            raise ValueError(f"preset {label}: {key} must be an object")
    if data.get("rules"):
        from engine import Rules

        try:
            Rules.from_dict({**Rules().to_dict(), **data["rules"]})
        except (TypeError, ValueError) as e:
            raise ValueError(f"preset {label}: its rules make no game: {e}") from None
    budget = data.get("budget") or {}
    unknown = sorted(set(budget) - {"episodes", "steps", "seconds", "minutes", "cpu_seconds"})
    if unknown:
        raise ValueError(
            f"preset {label}: budget has no {unknown[0]!r} (episodes, steps, seconds, minutes, cpu_seconds)"
        )
    for key, value in budget.items():
        whole = key in ("episodes", "steps")
        ok = isinstance(value, int) if whole else isinstance(value, (int, float)) and math.isfinite(value)
        if value is not None and (isinstance(value, bool) or not ok or not 0 < value < 2**63):
            kind = "a whole number > 0" if whole else "a finite number > 0"
            raise ValueError(f"preset {label}: budget {key} must be {kind}, got {value!r}")
