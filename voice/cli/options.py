"""The options the commands share: their flags, and the typed values built from them.

Every flag of a game's or the table's options is declared once here (:data:`GAME_FLAGS`,
:data:`TABLE_FLAGS`), naming the field of :mod:`voice.table.options` it sets; its range and
default are that field's. A number out of range is refused as the command line is parsed,
one line and exit status 2 (:class:`Parser`), and :func:`setup_from` builds the game a
command plays from the parsed flags, once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, NoReturn

from voice.cli.output import one_line
from voice.recognition.interface import DEFAULT_BACKEND, backends
from voice.table.games import GAMES, GameBinding, lookup
from voice.table.journal import Setup
from voice.table.options import (
    ORDERS,
    SEED,
    Bounds,
    ChaosteriaOptions,
    DessertsOptions,
    OptionError,
    Options,
    PoutineOptions,
    TableOptions,
)
from voice.table.referee import game_setup
from voice.table.transcript import Transcript, read_stack_file, split_list, split_names


class UsageError(ValueError):
    """Options that parse one by one but not together, named by flag."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (``orderup CMD: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {one_line(message)}", file=sys.stderr)
        sys.exit(2)


def argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse ``type``: its ``ValueError`` becomes the error line."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


def number(bounds: Bounds) -> Callable[[str], float]:
    """An argparse ``type`` for a number within ``bounds``."""
    return argument(bounds.parse)


def in_range(help: str, bounds: Bounds, default: float | None = None) -> str:
    """``help`` followed by the range of the number and its default."""
    return f"{help} ({bounds.describe()}" + ("" if default is None else f"; default {default:g}") + ")"


@dataclass(frozen=True)
class Flag:
    """The command-line flag that sets ``field`` of an options class."""

    flag: str
    field: str
    metavar: str | None
    help: str
    parse: Callable[[str], Any] | None = None
    """How the text is read (None: a number in the field's range)."""
    choices: tuple[str, ...] | None = None

    def add(self, p: argparse.ArgumentParser | argparse._ArgumentGroup, options: type) -> None:
        spec = next(f for f in fields(options) if f.name == self.field)
        bounds: Bounds | None = spec.metadata.get("bounds")
        default = None if spec.default in (MISSING, None, ()) else spec.default
        if bounds is not None:
            help, parse = in_range(self.help, bounds, default), number(bounds)
        else:
            help = self.help if default is None else f"{self.help} (default {default})"
            parse = argument(self.parse or str)
        p.add_argument(self.flag, dest=self.field, type=parse, choices=self.choices,
                       metavar=self.metavar, default=argparse.SUPPRESS, help=help)


GAME_FLAGS: dict[type, tuple[Flag, ...]] = {
    DessertsOptions: (
        Flag("--trump-window", "trump_window_s", "S",
             "seconds after a serve is named in which another caller may trump it"),
        Flag("--guest-timeout", "guest_timeout_s", "S",
             "seconds of silence after a guest's announcement ends before it leaves hungry"),
    ),
    PoutineOptions: (
        Flag("--waitresses", "waitresses", "A,B",
             "players who wait tables in round 1, rotating left each round "
             "(default: the app plays the waitresses and everyone cooks)", split_names),
        Flag("--variant", "variants", "V,V",
             "variants: gifts (mop gifts at round start), live (one open offer per cook)",
             split_list),
        Flag("--orders-shown", "orders_shown", "N",
             "orders each waitress shows at once; by default 3, or 2 with bigger staff"),
    ),
    ChaosteriaOptions: (
        Flag("--orders", "orders", None,
             "house: the app deals order cards and reads the options; "
             "table: players hold physical cards and say their choices", choices=ORDERS),
        Flag("--kitchen", "kitchen", "N", "dishes face up in the kitchen, refilled after every turn"),
        Flag("--bell-window", "bell_window_s", "S",
             "seconds after a client is named (or a dish returned) in which the bell may ring"),
    ),
}
"""Each game's flags, by the class of its options."""

TIE_WINDOW = Flag("--tie-window-ms", "tie_window_ms", "MS",
                  "calls whose onsets differ by less than this are simultaneous")
JOIN_GAP = Flag("--join-gap", "join_gap_s", "S",
                "a pause up to this long inside an unfinished phrase ('brownie and ... whipped "
                "cream') does not cut it in two")
VOICE_FLAGS = (
    Flag("--rate", "rate_wpm", "WPM", "the narrator's speaking rate, in words per minute"),
    Flag("--voice", "voice", "NAME", "espeak-ng voice, e.g. en-us, en-gb-scotland"),
)
CLIPS = Flag("--clips-mb", "clips_mb", "MB",
             "the calls' sound kept beside the journal (for 'orderup dispute' and the r key) "
             "stays under this size, the oldest dropped first")
TABLE_FLAGS = (TIE_WINDOW, JOIN_GAP, CLIPS, *VOICE_FLAGS)
"""The flags of :class:`TableOptions`; a command takes those it uses."""


def add_tie_window_argument(p: argparse.ArgumentParser) -> None:
    TIE_WINDOW.add(p, TableOptions)


def add_join_gap_argument(p: argparse.ArgumentParser) -> None:
    JOIN_GAP.add(p, TableOptions)


def add_clips_argument(p: argparse.ArgumentParser) -> None:
    CLIPS.add(p, TableOptions)


def add_voice_arguments(p: argparse.ArgumentParser) -> None:
    for flag in VOICE_FLAGS:
        flag.add(p, TableOptions)


def add_game_arguments(p: argparse.ArgumentParser, game_option: bool = False) -> None:
    """GAME, players, seed, stacked decks, tie window and each game's own options."""
    if game_option:
        p.add_argument("--game", required=True, metavar="GAME", help=f"one of: {', '.join(GAMES)}")
    else:
        p.add_argument("game", metavar="GAME", help=f"one of: {', '.join(GAMES)}")
    p.add_argument("--players", type=argument(split_names), metavar="A,B,C",
                   help="seating order, to the right")
    p.add_argument("--seed", type=number(SEED), metavar="N", help=in_range("shuffle seed", SEED, 0))
    p.add_argument(
        "--stack", metavar="FILE",
        help="file of 'DECK: Card, Card, ...' lines fixing the top of decks (top first)",
    )
    add_tie_window_argument(p)
    for game in GAMES.values():
        group = p.add_argument_group(f"{game.title} options")
        for flag in GAME_FLAGS[game.options]:
            flag.add(group, game.options)


def add_output_arguments(p: argparse.ArgumentParser, journal: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    if journal:
        p.add_argument(
            "--journal", metavar="FILE",
            help="append every step to this journal as it happens (restore: 'orderup resume FILE')",
        )
    p.add_argument(
        "--realtime", action="store_true",
        help="pace the transcript in real time, as a live table would hear it",
    )


def add_live_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mics", metavar="SPEC",
                   help="DEVICE (one multichannel interface) or DEV:CH,... (one per player); "
                   "default: the set-up saved by 'orderup calibrate'")
    p.add_argument("--setup", metavar="FILE", help="a saved table set-up (default: your config dir)")
    p.add_argument("--no-speech", action="store_true", help="print the narration, do not speak it")


def add_backend_argument(p: argparse.ArgumentParser, default: str | None = DEFAULT_BACKEND,
                         why: str = "it hears people best") -> None:
    """``--backend``: ``default`` unless given (with ``why``; None: ``why`` says what)."""
    said = f"{default}; {why}" if default else why
    p.add_argument("--backend", default=default,
                   help=f"recogniser: {', '.join(backends())} (default: {said})")


def _options(kind: type, flags: Sequence[Flag], args: argparse.Namespace) -> Any:
    """The ``kind`` of options the given ``flags`` set (the others keep their defaults)."""
    try:
        return kind(**{f.field: getattr(args, f.field) for f in flags if hasattr(args, f.field)})
    except OptionError as exc:
        flag = next((f.flag for f in flags if f.field == exc.name), exc.name)
        raise UsageError(f"argument {flag}: {exc.problem}") from None


def game_options(args: argparse.Namespace, game: GameBinding) -> Any:
    """The options of ``game`` its flags set; another game's flag is a :class:`UsageError`."""
    for kind, flags in GAME_FLAGS.items():
        stray = [f.flag for f in flags if kind is not game.options and hasattr(args, f.field)]
        if stray:
            raise UsageError(f"argument {stray[0]}: not an option of {game.title}")
    return _options(game.options, GAME_FLAGS[game.options], args)


def table_options(args: argparse.Namespace) -> TableOptions:
    """The table's options, from those of its flags the command takes."""
    options: TableOptions = _options(TableOptions, TABLE_FLAGS, args)
    return options


def command_line(options: Any) -> list[str]:
    """The flags that give a game's ``options``: those that differ from its defaults."""
    defaults = type(options)()
    flags: list[str] = []
    for flag in GAME_FLAGS[type(options)]:
        value = getattr(options, flag.field)
        if value != getattr(defaults, flag.field):
            flags += [flag.flag, ",".join(value) if isinstance(value, tuple) else str(value)]
    return flags


def setup_from(args: argparse.Namespace, transcript: Transcript | None = None) -> Setup:
    """The game a command's flags describe (then the ``transcript``'s directives).

    Raises a ``ValueError`` subclass naming what is wrong.
    """
    game = lookup(args.game)
    return game_setup(
        game, Options(game_options(args, game), table_options(args)), transcript,
        players=args.players, seed=args.seed,
        stacks=read_stack_file(args.stack) if args.stack else None,
    )
