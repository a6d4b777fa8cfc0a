"""The HALT switch: ``.wavegit/HALT`` on the tracker branch stops new waves and new attempts.

The file is written and removed through the compare-and-swap store, so halting is one commit that every
scheduler sees on its next read. It holds who, when and why as JSON (hand-written YAML is read too). Fail
closed: a HALT file that cannot be parsed still halts, and the message says it is corrupt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from wavegit.core.errors import HaltedError
from wavegit.model.config import HALT_PATH
from wavegit.trackerbranch.store import Change, MutationResult, Snapshot, TrackerStore, mutate


@dataclass(frozen=True)
class HaltNotice:
    who: str
    when: str
    why: str


def render(notice: HaltNotice) -> str:
    return json.dumps({"who": notice.who, "when": notice.when, "why": notice.why}, indent=2) + "\n"


def parse(text: str) -> HaltNotice:
    """The notice in a HALT file; ValueError when it is not a mapping with string who/when/why."""
    data: object
    try:
        data = json.loads(text)
    except ValueError:
        import yaml  # only for hand-written HALT files; JSON is what wavegit writes

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            data = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            raise ValueError(f"neither JSON nor YAML ({exc.__class__.__name__})") from exc
    if not isinstance(data, dict):
        raise ValueError("not a mapping of who/when/why")
    fields = {key: data.get(key) for key in ("who", "when", "why")}
    missing = [key for key, value in fields.items() if not isinstance(value, str) or not value.strip()]
    if missing:
        raise ValueError(f"missing or not text: {', '.join(missing)}")
    return HaltNotice(**{key: str(value) for key, value in fields.items()})


def describe(text: str) -> str:
    """Why a wave may not start, for an error message."""
    try:
        notice = parse(text)
    except ValueError as exc:
        return f"halted: {HALT_PATH} is corrupt ({exc}); it still halts — run `wavegit resume` to remove it"
    return f"halted by {notice.who} at {notice.when}: {notice.why} (run `wavegit resume` to continue)"


def halt_text(store: TrackerStore, snapshot: Snapshot) -> str | None:
    """The HALT file's text at ``snapshot``, or None when wavegit is not halted."""
    return store.read_file(snapshot, HALT_PATH)


def current_text(store: TrackerStore) -> str | None:
    """The HALT file's text at the tracker branch's head now, or None when wavegit is not halted."""
    return store.read_head_file(HALT_PATH)


def check(store: TrackerStore, snapshot: Snapshot) -> None:
    """Raise HaltedError when ``.wavegit/HALT`` exists at ``snapshot`` (corrupt or not)."""
    text = halt_text(store, snapshot)
    if text is not None:
        raise HaltedError(describe(text))


def halt(store: TrackerStore, *, reason: str, who: str, now: datetime | None = None,
         force: bool = False) -> MutationResult:
    """Commit ``.wavegit/HALT``. Already halted, nothing is written and the first notice stands (who stopped
    work, and why, is what the next person needs), unless ``force`` replaces it."""
    when = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).isoformat(timespec="seconds")
    text = render(HaltNotice(who=who, when=when, why=reason))

    def apply(snapshot: Snapshot) -> Change | None:
        current = halt_text(store, snapshot)
        if current is not None and (not force or current == text):
            return None
        return Change(None, {HALT_PATH: text})

    return mutate(store, apply, message=f"wavegit: halt: {reason.splitlines()[0]}")


def resume(store: TrackerStore) -> MutationResult:
    """Remove ``.wavegit/HALT``; nothing is written when it is absent."""

    def apply(snapshot: Snapshot) -> Change | None:
        return None if halt_text(store, snapshot) is None else Change(None, {HALT_PATH: None})

    return mutate(store, apply, message="wavegit: resume")
