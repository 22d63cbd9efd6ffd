"""The options a game is played with: one frozen, validated value per game and one for the table.

Each game's options (:class:`DessertsOptions`, :class:`PoutineOptions`,
:class:`ChaosteriaOptions`) and the table's (:class:`TableOptions`: tie window, join gap, clip limit, narration) are
checked when they are made, whether from the command line or read back from a journal: every
number is finite and in its range, or :class:`OptionError` names the option. Their defaults are
the engine's. The journal records :class:`Options` as :meth:`Options.to_json`, keyed by these
fields (never by command-line flags) and versioned, so that how an option is spelt on the
command line has no say in how a journal replays.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from engine.chaosteria import HOUSE, TABLE, ChaosteriaConfig
from engine.core import DEFAULT_TIE_WINDOW_MS, NARRATION_WPM
from engine.desserts import DessertsConfig
from engine.players import check_names
from engine.poutine import PoutineConfig

DEFAULT_JOIN_GAP_S = 1.2
"""A pause inside an unfinished phrase ("brownie and … whipped cream") up to this long does not
cut it in two: the parts are decoded together (:class:`voice.table.pipeline.Pipeline`)."""

DEFAULT_CLIPS_MB = 40.0
"""The size the calls' sound kept beside a journal is held under (:mod:`voice.table.clips`): the
oldest clips beyond it are dropped. About an evening of calls."""

OPTIONS_VERSION = 2
"""Bumped whenever :meth:`Options.to_json` changes shape: fields renamed, added or removed."""


class OptionError(ValueError):
    """An option out of its range (or of the wrong kind), named by its field."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


@dataclass(frozen=True)
class Bounds:
    """The range of a numeric option: ``low`` (excluded when ``low_open``) to ``high``."""

    low: float
    high: float
    unit: str = ""
    low_open: bool = False
    whole: bool = False

    def describe(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        low = f"more than {_number(self.low)} and at most" if self.low_open else f"from {_number(self.low)} to"
        return f"{kind} {low} {_number(self.high)}" + (f" {self.unit}" if self.unit else "")

    def check(self, value: object) -> None:
        """Raises ``ValueError`` saying what is expected unless ``value`` is in range."""
        if not self._fits(value):
            raise ValueError(self._expected(value))

    def _fits(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if isinstance(value, float) and (self.whole or not math.isfinite(value)):
            return False
        return (self.low < value if self.low_open else self.low <= value) and value <= self.high

    def _expected(self, got: object) -> str:
        return f"expected {self.describe()}, got {got!r}"

    def parse(self, text: str) -> float:
        """The number ``text`` spells, if it is in range (``ValueError`` otherwise)."""
        try:
            value = int(text) if self.whole else float(text)
        except ValueError:
            raise ValueError(self._expected(text)) from None
        self.check(value)
        return value


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


SEED = Bounds(0, 2**32 - 1, whole=True)
"""A game's shuffle seed (``--seed``, ``@seed``)."""


def bounded(bounds: Bounds) -> dict[str, Bounds]:
    """Field metadata giving a numeric option its range."""
    return {"bounds": bounds}


def engine_default(config: type, name: str) -> Any:
    """The default the engine's ``config`` class gives field ``name``: written once, there."""
    return next(f.default for f in fields(config) if f.name == name)


class _Checked:
    """Checks every bounded field of a dataclass when it is made, then :meth:`check`."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __post_init__(self) -> None:
        for f in fields(self):
            bounds = f.metadata.get("bounds")
            value = getattr(self, f.name)
            if bounds is not None and not (value is None and f.default is None):
                try:
                    bounds.check(value)
                except ValueError as exc:
                    raise OptionError(f.name, str(exc)) from None
        self.check()

    def check(self) -> None:
        """What a class checks beyond its fields' ranges."""


ORDERS = (HOUSE, TABLE)


@dataclass(frozen=True)
class DessertsOptions(_Checked):
    trump_window_s: float = field(default=engine_default(DessertsConfig, "trump_window_s"),
                                  metadata=bounded(Bounds(0, 60, "seconds")))
    """Seconds after a serve is named in which another caller may trump it."""
    guest_timeout_s: float = field(default=engine_default(DessertsConfig, "guest_timeout_s"),
                                   metadata=bounded(Bounds(0, 3600, "seconds", low_open=True)))
    """Seconds after a guest's announcement ends before it leaves hungry."""


@dataclass(frozen=True)
class PoutineOptions(_Checked):
    waitresses: tuple[str, ...] = engine_default(PoutineConfig, "waitresses")
    """Players who wait tables in round 1 (none: the app plays the waitresses)."""
    variants: tuple[str, ...] = engine_default(PoutineConfig, "variants")
    """The variants played (the engine knows which there are)."""
    orders_shown: int | None = field(default=engine_default(PoutineConfig, "orders_shown"),
                                     metadata=bounded(Bounds(2, 3, whole=True)))
    """Orders each waitress shows at once (None: as the staff's size decides)."""

    def check(self) -> None:
        _strings("variants", self.variants)
        try:
            check_names(_strings("waitresses", self.waitresses))
        except ValueError as exc:
            raise OptionError("waitresses", str(exc)) from None


@dataclass(frozen=True)
class ChaosteriaOptions(_Checked):
    orders: str = engine_default(ChaosteriaConfig, "orders")
    """house: the app deals order cards; table: players hold physical cards."""
    kitchen: int = field(default=engine_default(ChaosteriaConfig, "kitchen"),
                         metadata=bounded(Bounds(1, 12, "dishes", whole=True)))
    bell_window_s: float = field(default=engine_default(ChaosteriaConfig, "bell_window_s"),
                                 metadata=bounded(Bounds(0, 60, "seconds", low_open=True)))

    def check(self) -> None:
        if self.orders not in ORDERS:
            raise OptionError("orders", f"expected {' or '.join(ORDERS)}, got {self.orders!r}")


@dataclass(frozen=True)
class TableOptions(_Checked):
    """What the table itself is run with, whatever the game."""

    tie_window_ms: float = field(default=DEFAULT_TIE_WINDOW_MS,
                                 metadata=bounded(Bounds(0, 1000, "milliseconds")))
    """Calls whose onsets differ by less than this are simultaneous."""
    join_gap_s: float = field(default=DEFAULT_JOIN_GAP_S, metadata=bounded(Bounds(0, 5, "seconds")))
    """A pause inside an unfinished phrase up to this long does not cut it in two."""
    clips_mb: float = field(default=DEFAULT_CLIPS_MB, metadata=bounded(Bounds(1, 100000, "MB")))
    """The calls' sound kept beside the journal is held under this size."""
    rate_wpm: int = field(default=NARRATION_WPM, metadata=bounded(Bounds(80, 450, "words a minute",
                                                                         whole=True)))
    """The narrator's speaking rate (the rules reckon how long an announcement lasts by it)."""
    voice: str | None = None
    """The narrator's espeak-ng voice (None: its default)."""

    def check(self) -> None:
        if self.voice is not None and (not isinstance(self.voice, str) or not self.voice.strip()):
            raise OptionError("voice", f"expected a voice name, got {self.voice!r}")


def _strings(name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, tuple) or not all(isinstance(item, str) for item in value):
        raise OptionError(name, f"expected a list of words, got {value!r}")
    return value


@dataclass(frozen=True)
class Options:
    """A game's options and the table's: what a journal records, versioned."""

    game: Any
    """The game's own options: a :class:`DessertsOptions`, :class:`PoutineOptions` or
    :class:`ChaosteriaOptions`."""
    table: TableOptions = field(default_factory=TableOptions)

    def to_json(self) -> dict[str, Any]:
        return {"version": OPTIONS_VERSION, "game": asdict(self.game), "table": asdict(self.table)}

    @classmethod
    def from_json(cls, game_options: type, data: object) -> Options:
        """Read back what :meth:`to_json` wrote for a game whose options are ``game_options``;
        raises :class:`OptionError` for another version or a value out of range."""
        if not isinstance(data, Mapping) or data.get("version") != OPTIONS_VERSION:
            version = data.get("version") if isinstance(data, Mapping) else None
            raise OptionError("options", f"version {version!r} is unknown (this orderup reads "
                              f"version {OPTIONS_VERSION})")
        return cls(_from_json(game_options, data.get("game")), _from_json(TableOptions, data.get("table")))


def _from_json(kind: type, values: object) -> Any:
    """An options value of class ``kind`` from its fields as JSON (lists are tuples again)."""
    names = {f.name for f in fields(kind)}
    if not isinstance(values, Mapping) or set(values) != names:
        given = sorted(values) if isinstance(values, Mapping) else values
        raise OptionError("options", f"{kind.__name__} has the fields {', '.join(sorted(names))}, "
                          f"not {given!r}")
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})

