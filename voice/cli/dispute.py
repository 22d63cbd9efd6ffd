"""``orderup dispute JOURNAL``: hear and see why a close call went the way it did."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from voice.cli.options import number
from voice.cli.output import fail
from voice.table.clips import ClipError, clip_folder
from voice.table.dispute import DisputeError, Race, pick, playlist, races
from voice.table.journal import JournalError, restore
from voice.table.options import Bounds


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dispute",
        help="play back a close call in onset order and draw its timeline",
        description="For a close call of a journaled game (two or more players calling within "
        "150 ms), says why the verdict went as it did ('Maya, 18 milliseconds before Leo'), "
        "plays the calls again one after the other, earliest onset first, each from its own "
        "player's mic, and writes a timeline picture: one lane per mic, each onset marked, "
        "the copies of a call on the other mics hatched, the tie window shaded. The sound "
        "comes from the clips kept beside the journal (JOURNAL.clips/).",
        epilog="examples:\n  orderup dispute game.jsonl            the last close call\n"
        "  orderup dispute game.jsonl --list     every close call, numbered\n"
        "  orderup dispute game.jsonl --verdict 3 --picture race.png --no-sound",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("journal", metavar="JOURNAL", help="the game's journal")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--last", action="store_true", help="the last close call (the default)")
    which.add_argument("--at", type=number(Bounds(0, 1e6, "s")), metavar="SECONDS",
                       help="the close call nearest this game time")
    which.add_argument("--verdict", type=number(Bounds(1, 1e6, whole=True)), metavar="N",
                       help="close call number N (see --list)")
    which.add_argument("--list", action="store_true", help="list the game's close calls")
    p.add_argument("--picture", metavar="FILE.png",
                   help="where to write the timeline (default: JOURNAL.clips/close-call-N.png)")
    p.add_argument("--no-sound", action="store_true", help="say and play nothing, only print")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        _, state, restored = restore(args.journal)
        found = races(restored.heard)
        if args.list:
            for race in found:
                print(describe(race, state.config.tie_window_ms, args.json))
            if not found:
                print("no close calls in this game")
            return 0
        race = pick(found, number=args.verdict, at_s=args.at)
        folder = clip_folder(args.journal)
        picture = Path(args.picture) if args.picture else folder / f"close-call-{race.number}.png"
        announcer = None
        if not args.no_sound:
            from voice.table.narration import start_announcer

            announcer = start_announcer(echo=lambda line: None)
        try:
            reason = dispute(race, folder, state.config.players, state.config.tie_window_ms,
                             picture, announcer)
        finally:
            if announcer is not None:
                announcer.close()
    except (JournalError, DisputeError, ClipError) as exc:
        return fail(args.command, str(exc))
    if args.json:
        print(json.dumps({**summary(race), "reason": reason, "picture": str(picture)}))
    else:
        print(f"{describe(race, state.config.tie_window_ms, False)}\npicture: {picture}")
    return 0


def dispute(race: Race, folder: Path, players: Sequence[str], tie_window_ms: float,
            picture: Path, announcer: Any | None) -> str:
    """Say the reason of ``race``'s verdict and play its calls in onset order (when there is
    an ``announcer``), and write its timeline to ``picture``; returns the reason."""
    from voice.table.timeline import draw, timeline

    reason = race.reason(tie_window_ms)
    if announcer is not None:
        announcer.say(reason, urgent=True, then=[sound for _, sound in playlist(race, folder)])
    picture.parent.mkdir(parents=True, exist_ok=True)
    draw(timeline(race, folder, players, tie_window_ms, reason), picture)
    return reason


def summary(race: Race) -> dict[str, Any]:
    """A race as JSON: its number and its calls in onset order."""
    return {"type": "close_call", "number": race.number,
            "calls": [{"player": c.player, "mic": c.mic, "text": c.text,
                       "onset_s": round(c.onset_s, 4)} for c in race.calls]}


def describe(race: Race, tie_window_ms: float, as_json: bool) -> str:
    if as_json:
        return json.dumps({**summary(race), "reason": race.reason(tie_window_ms)})
    said = ", ".join(f"{c.player} {c.onset_s:.3f} s" for c in race.calls)
    return f"#{race.number} {race.calls[0].text!r}: {race.reason(tie_window_ms)} ({said})"

