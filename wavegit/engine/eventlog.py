"""A wave's event log: ``<git dir>/wavegit/events/<wave>.jsonl``, one JSON object per line, written as the
wave runs, so a person (``wavegit status``) or a dashboard can follow it.

Lines: ``{"at", "event": "claimed", "items", "process"}`` first (again for each later batch of a rolling
wave, which adds its items; ``process``: the process writing the log, as
``wavegit.core.wavelock`` names one, so ``status`` can tell a wave whose writer is gone); then per item
``{"at", "item", "state", "attempt", "detail"}`` (queued, started, testing, verified, failed, cancelled,
not started; no attempt number for an attempt not counted);
``{"at", "note"}`` for what the wave says on the way (pushed, collected); ``{"at", "event": "finished",
"exit_code", "success"}`` last. A failure to write the log never stops a wave: the log is for watching, the
tracker and the report are the record.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from wavegit.core import wavelock
from wavegit.core.git import WaveId
from wavegit.engine.runs import Events


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class EventLog:
    """Appends a wave's events to its log (thread-safe; every line is flushed as it is written)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _write(self, record: dict[str, object]) -> None:
        line = json.dumps({"at": _now(), **record}, ensure_ascii=True) + "\n"
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as log:
                    log.write(line)
            except OSError:
                pass

    def claimed(self, wave_id: WaveId, item_ids: Sequence[str]) -> None:
        self._write({"event": "claimed", "wave": wave_id, "items": list(item_ids),
                     "process": wavelock.this_process(wave_id)._asdict()})

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None:
        self._write({"item": item_id, "state": state, "attempt": attempt, "detail": detail})

    def note(self, text: str) -> None:
        self._write({"note": text})

    def finished(self, exit_code: int, success: bool) -> None:
        self._write({"event": "finished", "exit_code": exit_code, "success": success})


class Tee:
    """Events told to several listeners (the live progress view and the log)."""

    def __init__(self, *listeners: Events) -> None:
        self.listeners = listeners

    def event(self, item_id: str, state: str, detail: str = "", *, attempt: int | None = None) -> None:
        for listener in self.listeners:
            listener.event(item_id, state, detail, attempt=attempt)

    def note(self, text: str) -> None:
        for listener in self.listeners:
            listener.note(text)


@dataclass
class ItemState:
    state: str = "claimed"
    attempt: int | None = None
    detail: str = ""


@dataclass
class WaveState:
    """What a wave's log says so far."""

    wave_id: WaveId
    started_at: str = ""
    items: dict[str, ItemState] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    finished: dict[str, object] | None = None
    process: dict[str, object] | None = None
    """Who wrote the log (``wavegit.core.wavelock.SchedulerLock`` fields); None until a claim names it."""


def read(path: Path) -> WaveState:
    """The state of the wave logged at ``path``; lines that are not log records (a torn last line of a
    wave that is still writing, a log from a newer wavegit) are skipped."""
    wave = WaveState(WaveId(path.stem))  # the log's name: wavegit named it
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("event") == "claimed":
            # A rolling wave (`run --continuous`) logs a claim for each batch it takes: items add up.
            wave.started_at = wave.started_at or str(record.get("at", ""))
            wave.items.update((str(item_id), ItemState()) for item_id in record.get("items", []))
            process = record.get("process")
            wave.process = process if isinstance(process, dict) else None
        elif record.get("event") == "finished":
            wave.finished = record
        elif "item" in record:
            attempt = record.get("attempt")
            wave.items[str(record["item"])] = ItemState(str(record.get("state", "")),
                                                         attempt if isinstance(attempt, int) else None,
                                                         str(record.get("detail", "")))
        elif "note" in record:
            wave.notes.append(str(record["note"]))
    return wave
