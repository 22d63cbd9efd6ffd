"""Every command's file inputs, mangled at random: each run ends with exit 0, or exit 2 and one
line on stderr, never a traceback; and the files a command only reads are unchanged after it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referee_helpers import in_process

from voice.audio.files import write_wav
from voice.table.setup import MicInput, TableSetup

pytestmark = pytest.mark.slow

TRANSCRIPT = """\
@players Ann, Bob
@seed 3
@stack guests: Rocky, Frosty
# a comment
1.000 Ann: got it
1.020 Bob: got it
4.000 Bob: got it
5.500 Bob: rocky road
9.250 Ann: pass
"""
STACK = "guests: Rocky, Frosty\ndesserts: Apple Pie, Brownie\n"
PHRASES = "got it\npass\nrocky road\n"

NASTY = ["nan", "-nan", "inf", "-inf", "-5", "-0.001", "1e308", "1e400", "9" * 30, "abc", "",
         "0x10", "١٢"]
NUMBER = re.compile(rb"-?\d+(\.\d+)?")


@st.composite
def mangled(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` after one to three random edits: bytes flipped, the file cut, lines dropped or
    repeated, numbers replaced by nasty ones, the text in another encoding."""
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "cut", "line", "number", "encoding"]))
        if how == "flip" and data:
            at = draw(st.integers(0, len(data) - 1))
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
        elif how == "cut":
            data = data[: draw(st.integers(0, len(data)))]
        elif how == "line":
            lines = data.split(b"\n")
            at = draw(st.integers(0, len(lines) - 1))
            lines[at:at + 1] = draw(st.sampled_from([[], [lines[at]] * 2, [lines[at][::-1]]]))
            data = b"\n".join(lines)
        elif how == "number":
            found = list(NUMBER.finditer(data))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                data = data[: m.start()] + draw(st.sampled_from(NASTY)).encode() + data[m.end():]
        elif how == "encoding":
            text = data.decode("utf-8", "replace")
            codec = draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "utf-8-sig", "cp1252"]))
            data = text.encode(codec, "replace")
    return data


def settled(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), (code, err)


class Files(dict[str, bytes]):
    """The good files by kind (shown by their kinds alone when a test fails)."""

    def __repr__(self) -> str:
        return f"Files({', '.join(self)})"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A valid file of every kind the commands read."""
    folder = tmp_path_factory.mktemp("good")
    (folder / "t.txt").write_text(TRANSCRIPT, "utf-8")
    assert in_process("referee", "desserts", "--transcript", str(folder / "t.txt"), "--journal",
               str(folder / "j.jsonl"))[0] == 0
    rng = np.random.default_rng(0)
    write_wav(folder / "w.wav", (0.01 * rng.standard_normal((8000, 2))).astype(np.float32), 16000)
    TableSetup(("Ann", "Bob"), (MicInput(None, 0), MicInput(None, 1)), (-60.0, -60.0)).save(
        folder / "table.json")
    return Files({"transcript": TRANSCRIPT.encode(), "stack": STACK.encode(), "phrases": PHRASES.encode(),
            "journal": (folder / "j.jsonl").read_bytes(), "wav": (folder / "w.wav").read_bytes(),
            "setup": (folder / "table.json").read_bytes()})


Command = tuple[str, str, Callable[[dict[str, str]], list[str]], bool]
"""(the input mangled, its file name, the command line given the files, whether the command
only reads that input)."""

NAMES = {name: name for name in ("t.txt", "s.txt", "j.jsonl", "p.txt", "w.wav", "table.json",
                                  "good.txt", "good.jsonl", "good.wav", "out.json")}

COMMANDS: list[Command] = [
    ("transcript", "t.txt", lambda f: ["referee", "desserts", "--transcript", f["t.txt"]], True),
    ("stack", "s.txt", lambda f: ["referee", "desserts", "--players", "Ann,Bob", "--stack",
                                  f["s.txt"], "--transcript", f["good.txt"]], True),
    ("journal", "j.jsonl", lambda f: ["resume", f["j.jsonl"]], True),
    ("journal", "j.jsonl", lambda f: ["resume", f["j.jsonl"], "--transcript", f["good.txt"]], False),
    ("transcript", "t.txt", lambda f: ["resume", f["good.jsonl"], "--transcript", f["t.txt"]], True),
    ("journal", "j.jsonl", lambda f: ["dispute", f["j.jsonl"], "--list", "--no-sound"], True),
    ("phrases", "p.txt", lambda f: ["listen", f["good.wav"], "--phrases", f["p.txt"]], True),
    ("wav", "w.wav", lambda f: ["listen", f["w.wav"], "--players", "Ann,Bob"], True),
    ("setup", "table.json", lambda f: ["replay", f["good.wav"], "--game", "desserts", "--players",
                                       "Ann,Bob", "--setup", f["table.json"]], True),
    ("wav", "w.wav", lambda f: ["calibrate", "--players", "Ann,Bob", "--from-wav", f["w.wav"],
                                "--out", f["out.json"]], True),
]


@pytest.mark.parametrize("kind, name, argv, read_only", COMMANDS,
                         ids=[f"{c[2](NAMES)[0]}-{c[0]}-{i}" for i, c in enumerate(COMMANDS)])
@settings(max_examples=25, deadline=None, derandomize=True,  # the same inputs on every run
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mangled_inputs_end_in_exit_0_or_one_line(
        good: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, kind: str, name: str,
        argv: Callable[[dict[str, str]], list[str]], read_only: bool, data: st.DataObject) -> None:
    folder = tmp_path_factory.mktemp("mangled")
    files = {"good.txt": folder / "good.txt", "good.jsonl": folder / "good.jsonl",
             "good.wav": folder / "good.wav", "out.json": folder / "out.json"}
    files["good.txt"].write_bytes(good["transcript"])
    files["good.jsonl"].write_bytes(good["journal"])
    files["good.wav"].write_bytes(good["wav"])
    given_bytes = data.draw(mangled(good[kind]))
    (folder / name).write_bytes(given_bytes)
    paths = {key: str(path) for key, path in files.items()} | {name: str(folder / name)}
    code, _, err = in_process(*argv(paths))
    settled(code, err)
    if read_only:
        assert (folder / name).read_bytes() == given_bytes
    shutil.rmtree(folder)
