"""``orderup devices`` and ``orderup calibrate``: find the microphones and map them to players."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from voice.cli.options import argument, in_range, number
from voice.cli.output import fail
from voice.table.options import Bounds
from voice.table.setup import NOISE_S, TURN_S
from voice.table.transcript import split_names

if TYPE_CHECKING:
    from voice.audio.live import MicInput


LISTEN_S = Bounds(0.5, 60, "seconds")
"""How long calibration may listen to the room, or to each player."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "devices",
        help="list audio input devices and their channels",
        description="List the audio input devices this machine has, with their channel counts, "
        "so you can pick one for --mics (a 4-channel USB interface: one mic per player).",
    )
    d.set_defaults(handler=handle_devices)

    c = sub.add_parser(
        "calibrate",
        help="have each player say their name; map mics to players and check levels",
        description="Measures the room's noise, then asks each player in turn to say their name. "
        "Maps every player to the mic that hears them loudest, measures each mic's level, warns "
        "about a mic that hears another player as loud as its own, and saves the set-up for "
        "'orderup play'.",
        epilog="examples:\n  orderup calibrate --players Maya,Leo,Priya,Omar --mics 2\n"
        "  orderup calibrate --players Maya,Leo --mics 3:0,4:0      (two USB mics)\n"
        "  orderup calibrate --players Maya,Leo --from-wav names.wav (a recording instead)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("--players", type=argument(split_names), required=True, metavar="A,B,C",
                   help="players in seating order")
    c.add_argument("--mics", metavar="SPEC",
                   help="DEVICE (one multichannel interface) or DEV:CH,DEV:CH,... (one per player)")
    c.add_argument("--from-wav", metavar="FILE",
                   help="analyse a recording (silence, then each name in turn) instead of live mics")
    c.add_argument("--noise", type=number(LISTEN_S), default=NOISE_S, metavar="S",
                   help=in_range("seconds of silence", LISTEN_S, NOISE_S))
    c.add_argument("--turn", type=number(LISTEN_S), default=TURN_S, metavar="S",
                   help=in_range("seconds per player", LISTEN_S, TURN_S))
    c.add_argument("--out", metavar="FILE", help="where to save the set-up (default: your config dir)")
    c.set_defaults(handler=handle_calibrate)


def handle_devices(args: argparse.Namespace) -> int:
    try:
        import sounddevice as sd

        devices = sd.query_devices()
    except (OSError, ImportError) as exc:
        return fail(args.command, f"cannot list audio devices: {exc} (install libportaudio2)")
    inputs = [(i, d) for i, d in enumerate(devices) if d["max_input_channels"] > 0]
    if not inputs:
        print("No audio input devices found. Plug in a USB audio interface or USB microphones, "
              "then run 'orderup devices' again.")
        return 0
    print("Input devices (use the number or the name with --mics):")
    for i, d in inputs:
        print(f"  {i:3d}  {d['name']}  — {d['max_input_channels']} channels, "
              f"{d['default_samplerate']:.0f} Hz")
    return 0


def _live_turns(args: argparse.Namespace, mics: list[MicInput]) -> np.ndarray:
    """Record the room, then each player's name, each prompt spoken before it is shown."""
    import sys

    from voice.audio.live import LiveSource
    from voice.table.narration import start_announcer
    from voice.table.setup import listen_to_turns

    announcer = start_announcer(echo=lambda line: None)  # a prompt is shown once it is said
    tty = sys.stdout.isatty()

    def show(line: str) -> None:
        print(("\n" if tty else "") + line, flush=True)

    def meter(level_db: float) -> None:
        bars = "█" * max(0, int((level_db + 60) / 3))
        print(f"\r  {bars:<20} {level_db:5.0f} dB", end="", flush=True)

    try:
        return listen_to_turns(args.players, (f.samples for f in LiveSource(mics)),
                               announcer.say, show, args.noise, args.turn, meter if tty else None)
    finally:
        announcer.close()
        if tty:
            print()


def handle_calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from voice.audio.files import read_wav
    from voice.audio.frames import AudioFileError, AudioStreamError
    from voice.audio.live import MicInput
    from voice.table.setup import SetupError, calibrate, default_path, parse_mics

    try:
        mics = parse_mics(args.mics, len(args.players))
        audio = read_wav(args.from_wav) if args.from_wav else _live_turns(args, mics)
        result = calibrate(audio, args.players, args.noise, args.turn)
    except (SetupError, AudioFileError, AudioStreamError) as exc:
        return fail(args.command, str(exc))
    print(f"{'player':12s} {'channel':>7s} {'level dB':>9s} {'noise dB':>9s} {'SNR dB':>7s}")
    for p, ch, level in zip(result.players, result.channels, result.level_db, strict=True):
        noise = result.noise_floor_db[ch]
        print(f"{p:12s} {ch:7d} {level:9.1f} {noise:9.1f} {level - noise:7.1f}")
    for warning in result.warnings:
        print(f"warning: {warning}")
    if not args.from_wav or args.out:
        path = Path(args.out) if args.out else default_path()
        inputs = [MicInput(None, ch) for ch in range(len(result.noise_floor_db))] if args.from_wav else mics
        setup = result.table_setup(inputs)
        try:
            setup.save(path)
        except OSError as exc:
            return fail(args.command, f"cannot save the set-up to {path}: {exc}")
        print(f"saved the set-up to {path}")
    return 0
