"""The table's screen: what is in play, scores, a level meter per mic, the last calls heard.

Built on ``rich`` (a well-kept terminal UI library: live redrawing, tables and
panels without curses code of our own). When the output is not a terminal the
same information is printed as plain lines, one per event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.core import Event
from voice.table.pipeline import Heard

KEYS = "[p] pause  [r] replay close call  [u] undo verdict  [q] quit"
MIN_HEIGHT = 24
"""The smallest terminal the screen is laid out for (80 × 24)."""


@dataclass
class TableView:
    """Everything the screen shows, updated by the table loop."""

    title: str
    players: tuple[str, ...]
    said: deque[str] = field(default_factory=lambda: deque(maxlen=12))
    """What the narrator said, as it said it (each line once: the announcer's echo)."""
    heard: deque[Heard] = field(default_factory=lambda: deque(maxlen=12))
    levels_db: np.ndarray = field(default_factory=lambda: np.full(0, -90.0))
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = ""
    clock: Callable[[float], float | None] = field(default=lambda t_s: t_s)
    """A call's onset (audio time) on the game's clock: None inside a pause (see
    :meth:`voice.table.loop.TableLoop.game_time`)."""

    def take(self, items: Sequence[Heard | Event]) -> None:
        self.heard.extend(item for item in items if isinstance(item, Heard))

    def meter(self, samples: np.ndarray) -> None:
        """Update each mic's level from the latest frame (dBFS, fast attack, slow release)."""
        rms = np.sqrt(np.mean(samples.astype(np.float64) ** 2, axis=0)) + 1e-9
        now = 20 * np.log10(rms)
        if self.levels_db.shape != now.shape:
            self.levels_db = now
        self.levels_db = np.maximum(now, self.levels_db - 1.5)


def render(view: TableView, height: int = MIN_HEIGHT) -> Any:
    """The view as a rich renderable no taller than ``height`` lines (a terminal's), so that
    redrawing it never scrolls: every row is one line, cut with an ellipsis where too wide,
    and the narration and the calls heard show as many of their latest lines as fit."""
    from rich.console import Group
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    fixed = 3 * 2 + 1 + len(view.players) + 1 + 1  # borders, two headers, the players, status
    room = max(2, height - fixed)
    n_heard = min(len(view.heard), room // 2)
    n_said = max(1, room - max(1, n_heard))
    said = Text("\n".join(list(view.said)[-n_said:]) or "…", no_wrap=True, overflow="ellipsis")
    scores = Table(expand=True, box=None)
    scores.add_column("player", no_wrap=True, overflow="ellipsis")
    columns: list[str] = []
    for stats in view.summary.get("players", {}).values():
        columns = [k for k in stats if k != "role"]
        break
    for name in columns:
        scores.add_column(name.replace("_", " "), justify="right", no_wrap=True)
    scores.add_column("mic", justify="left", no_wrap=True, overflow="ellipsis")
    for i, player in enumerate(view.players):
        stats = view.summary.get("players", {}).get(player, {})
        level = float(view.levels_db[i]) if i < len(view.levels_db) else -90.0
        bars = "█" * max(0, int((level + 60) / 3))
        scores.add_row(player, *(str(stats.get(c, "")) for c in columns), f"{bars:<20} {level:5.0f} dB")
    heard = Table(expand=True, box=None)
    for name in ("time", "who", "heard", "sure"):
        heard.add_column(name, no_wrap=True, overflow="ellipsis")
    for h in list(view.heard)[len(view.heard) - n_heard:]:
        text = escape(h.text) if h.understood else f"[dim]{escape(h.text) or '…'} (not understood)[/dim]"
        t_s = view.clock(h.onset_s)
        heard.add_row("paused" if t_s is None else f"{t_s:7.2f}", h.player, text,
                      f"{h.confidence:.2f}")
    return Group(
        Panel(said, title=view.title),
        Panel(scores, title="scores and microphones"),
        Panel(heard, title="heard"),
        Text(f"{view.status}  {KEYS}".strip(), no_wrap=True, overflow="ellipsis"),
    )
