"""An attempt made ready for its worker's launch (:func:`set_up`): its prompt, tree, sandbox and environment;
and, while a first attempt waits for its worker slot (:class:`Ahead`), its worker and item test started in
their sandboxes, parked at a gate (:func:`wavegit.attempts.runner.park`), so that the slot only has to say
go: bwrap's start (namespaces, mounts: some 9 ms of CPU each, eight at once ~47 ms on two cores) leaves the
wave's critical path."""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wavegit.attempts import runner, workspace
from wavegit.attempts.workspaces import Ready, Spec
from wavegit.core.errors import WavegitError
from wavegit.engine.runs import Attempt, utc_now
from wavegit.engine.slots import Meanwhile
from wavegit.model import tracker
from wavegit.model.prompt import render as render_prompt

if TYPE_CHECKING:
    from wavegit.engine.attempt import AttemptContext


def prompt_with_feedback(prompt: str, feedback: str | None) -> str:
    if not feedback:
        return prompt
    return f"{prompt.rstrip()}\n\n---\nFeedback from wavegit on the previous attempt:\n{feedback}"


@dataclass
class TestPad:
    """An item's test set up before its worker ran: its checkout (the sandbox binds this very directory, made
    now; sandboxed, filled with the base meanwhile, then moved to the worker's commit once it exists), its
    sandbox and environment, started parked."""

    checkout: Path
    confinement: runner.Confinement
    env: dict[str, str]
    parked: runner.Parked
    prepared: Future[bool] | None = None
    """The checkout made at the base meanwhile (:meth:`Workspaces.prepare_checkout`), sandboxed only."""


@dataclass
class Launchpad:
    """An attempt made ready for its worker's launch: its record, tree, sandbox and environment, and, set up
    ahead (:class:`Ahead`), its worker and test started parked. :meth:`close` puts it all away."""

    context: AttemptContext
    attempt: Attempt
    stem: str
    prompt: str
    spec: Spec
    ready: Ready | None = None
    confinement: runner.Confinement | None = None
    env: dict[str, str] = field(default_factory=dict)
    worker: runner.Parked | None = None
    test: TestPad | None = None

    def close(self) -> None:
        """Kill what was parked and not run; the tree and the private directories go in the background."""
        workspaces = self.context.workspaces
        if self.worker is not None:
            self.worker.drop()
        if self.test is not None:
            self.test.parked.drop()
            workspaces.discard(self.test.confinement.layout.private)
            workspaces.discard(self.test.checkout)
        workspaces.release(self.spec)
        workspaces.discard(self.context.confiner.private_root / self.stem)


def set_up(context: AttemptContext, item: tracker.Item, number: int, feedback: str | None, *,
           park: bool = False) -> Launchpad:
    """Attempt ``number`` of ``item`` up to its worker's launch: its prompt, tree, sandbox and environment;
    ``park``: its worker and its test started in their sandboxes, parked (:func:`runner.park`)."""
    stem = f"{item.id}-{item.attempts + number}"
    logs = context.logs
    logs.mkdir(parents=True, exist_ok=True)
    prompt = prompt_with_feedback(render_prompt(context.config.prompt_template, item), feedback)
    prompt_file = logs / f"{stem}.prompt"
    prompt_file.write_text(prompt, encoding="utf-8")
    feedback_file = logs / f"{stem}.feedback" if feedback else None
    if feedback_file is not None:
        feedback_file.write_text(feedback or "", encoding="utf-8")
    config = context.config
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    agent = context.agent(item)
    sandboxed = context.confiner.jail.bwrap is not None
    attempt = Attempt(item.attempts + number, agent.label(sandboxed), digest, context.base, utc_now(),
                      profile=agent.profile, model=agent.model, log_path=logs / f"{stem}.log")
    pad = Launchpad(context, attempt, stem, prompt, context.spec(item, number))
    try:
        # A tree not prepared in the background is made here, once its sandbox is started on the tree's
        # empty directory (bwrap binds it): bwrap builds the sandbox while the tree is made.
        building = not park and sandboxed and context.workspaces.reserve(pad.spec)
        if not building:
            pad.ready = context.workspaces.take(pad.spec)
        pad.confinement, pad.env = context.confiner.confine(
            pad.spec.path, stem, item_id=item.id, owns=item.owns, prompt_file=prompt_file,
            feedback_file=feedback_file, pass_github_token=config.worker_github_token)
        pad.env.update(agent.env(sandboxed))
        agent.seed_home(sandboxed, Path(pad.env["HOME"]))
        if park or building:
            pad.worker = runner.park(agent.argv(sandboxed), cwd=pad.spec.path, env=pad.env,
                                     confine=pad.confinement, building=building)
        if pad.ready is None:
            pad.ready = context.workspaces.take(pad.spec)
        elif park:
            pad.test = _park_test(context, item, pad.ready, attempt.number)
    except BaseException:
        pad.close()
        raise
    return pad


def _park_test(context: AttemptContext, item: tracker.Item, ready: Ready, number: int) -> TestPad | None:
    """The item's test started parked in the sandbox of its checkout, made empty now; None when its command
    cannot be parsed (the test then fails as it does unparked)."""
    try:
        argv = runner.command_argv(item.test)
    except WavegitError:
        return None
    checkout = checkout_of(ready)
    workspace.remove(checkout)
    checkout.mkdir()
    confinement, env = test_sandbox(context, item, checkout, number)
    parked = runner.park(argv, cwd=checkout, env=env, confine=confinement)
    # Unsandboxed, the worker could write into the checkout before its test runs there.
    sandboxed = context.confiner.jail.bwrap is not None
    return TestPad(checkout, confinement, env, parked,
                   context.workspaces.prepare_checkout(context.base, checkout) if sandboxed else None)


def test_sandbox(context: AttemptContext, item: tracker.Item, checkout: Path,
                      number: int) -> tuple[runner.Confinement, dict[str, str]]:
    return context.confiner.confine(checkout, f"{item.id}-{number}.test", item_id=item.id, owns=item.owns,
                                    prompt_file=Path(os.devnull), feedback_file=None,
                                    pass_github_token=False, test=True)


class Ahead:
    """An attempt set up while it waits for its worker slot, once the tree made for it in the background is
    ready: its worker and test start in their sandboxes, parked, off the wave's critical path. From the item's
    own thread, which runs them later: a sandbox dies with the thread that started it."""

    def __init__(self, context: AttemptContext, item: tracker.Item, feedback: str | None) -> None:
        self._context, self._item, self._feedback = context, item, feedback
        self._made = threading.Event()
        self._pad: Launchpad | None = None
        self._error: WavegitError | OSError | None = None
        context.workspaces.when_made(context.spec(item, 1), self._tell)

    def _tell(self) -> None:
        self._made.set()
        self._context.slots.poke()

    def meanwhile(self) -> Meanwhile:
        return Meanwhile(self._made.is_set, self._set_up)

    def _set_up(self) -> None:
        try:
            self._pad = set_up(self._context, self._item, 1, self._feedback, park=True)
        except (WavegitError, OSError) as exc:
            self._error = exc  # raised when the attempt would have started (take)

    def take(self) -> Launchpad | None:
        """The attempt set up ahead (the caller closes it), or None when it was not; what setting it up raised
        is raised here."""
        if self._error is not None:
            raise self._error
        pad, self._pad = self._pad, None
        return pad

    def close(self) -> None:
        """What was set up and never taken (the batch stopped, HALT) is killed and put away."""
        if self._pad is not None:
            self._pad.close()
            self._pad = None


def checkout_of(ready: Ready) -> Path:
    return ready.path.with_name(f"{ready.path.name}.test")
