"""``orderup say``: speak a line the way the app narrates, or render it to a WAV file."""

from __future__ import annotations

import argparse

from voice.cli.options import add_voice_arguments, table_options
from voice.cli.output import fail
from voice.table.narration import SpeechUnavailable


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "say",
        help="speak TEXT as the app would (or render it to a WAV file with --out)",
        description="Speak TEXT through the speaker with the app's narrator, or write it to a "
        "16 kHz mono WAV file with --out (what tests and recorded scenes use).",
        epilog="example: orderup say 'Maya first.' --out maya.wav --voice en-gb",
    )
    p.add_argument("text", metavar="TEXT")
    p.add_argument("--out", metavar="FILE.wav", help="write a WAV file instead of playing")
    add_voice_arguments(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import threading

    from voice.audio.files import write_wav
    from voice.audio.frames import PIPELINE_RATE_HZ
    from voice.table.narration import Pyttsx3Synthesizer, SpeakerSink

    table = table_options(args)
    try:
        samples = Pyttsx3Synthesizer(table.rate_wpm, table.voice).render(args.text)
        if args.out:
            write_wav(args.out, samples, PIPELINE_RATE_HZ)
            print(f"wrote {args.out} ({len(samples) / PIPELINE_RATE_HZ:.2f} s)")
        else:
            SpeakerSink().play(samples, threading.Event())
    except SpeechUnavailable as exc:
        return fail(args.command, f"{exc}" + ("" if args.out else "; try --out FILE.wav"))
    except OSError as exc:
        return fail(args.command, f"cannot write {args.out}: {exc}")
    return 0
