"""One item's attempts: the worker in a fresh worktree, then verification (exit, ownership, a change, the
item's test), and what the next attempt is told when one fails."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wavegit import budget, gitops, runner, tracker, worktree
from wavegit.config import Config
from wavegit.engine.records import Attempt, Events, ItemRun, utc_now
from wavegit.errors import WavegitError
from wavegit.lifecycle import one_line
from wavegit.ownership.patterns import matches
from wavegit.repo import Repo
from wavegit.workspaces import Spec, Workspaces

FEEDBACK_TAIL_LINES = 40


@dataclass
class AttemptContext:
    """What every attempt of a wave shares: where it runs and logs, what it spends, how the batch stops."""

    repo: Repo
    config: Config
    wave_id: str
    base: str
    worktrees: Path
    logs: Path
    events: Events
    spend: budget.WaveSpend
    workspaces: Workspaces
    cancel: threading.Event = field(default_factory=threading.Event)
    launch_error: str | None = None
    """Set by the first launch failure, which stops the batch."""
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def spec(self, item: tracker.Item, number: int) -> Spec:
        """The worktree of ``item``'s attempt ``number``."""
        return Spec(self.worktrees / f"{item.id}-{number}", worktree.item_branch(self.wave_id, item.id),
                    self.base)

    def stop_batch(self, reason: str) -> None:
        """A worker could not be launched: cancel the running ones, start nothing new."""
        with self._lock:
            if self.launch_error is None:
                self.launch_error = f"launch failure: {reason}"
        self.cancel.set()


def tail_source(attempt: Attempt) -> Path | None:
    """The log that says why an attempt failed: the test's when the test ran and failed, else the worker's."""
    return attempt.test_log_path if attempt.test_exit not in (None, 0) else attempt.log_path


def feedback_text(attempt: Attempt) -> str:
    """What the next attempt is told about this one."""
    lines = [f"Attempt {attempt.number} was not accepted: {attempt.error}."]
    if attempt.violations:
        lines.append("These paths are outside what the item owns; change only owned paths:")
        lines += [f"  {p}" for p in attempt.violations]
    tail_of = tail_source(attempt)
    tail = runner.log_tail(tail_of, FEEDBACK_TAIL_LINES) if tail_of else ""
    if tail:
        which = "test" if tail_of == attempt.test_log_path else "worker"
        lines += [f"Last lines of the {which} output:", tail]
    return "\n".join(lines) + "\n"


def prompt_with_feedback(prompt: str, feedback: str | None) -> str:
    if not feedback:
        return prompt
    return f"{prompt.rstrip()}\n\n---\nFeedback from wavegit on the previous attempt:\n{feedback}"


def run_attempts(context: AttemptContext, run: ItemRun, tries: int,
                 stop_reason: Callable[[], str | None]) -> None:
    """Up to ``tries`` attempts of ``run``'s item, until one is verified; ``stop_reason`` is asked before
    each (halted, over budget, cancelled). ``run`` is filled in place."""
    item = run.item
    if tries < 1:
        run.not_started = (f"not started: no attempt left ({item.attempts} of max_attempts "
                           f"{context.config.max_attempts} used)")
        context.events.event(item.id, "not started", run.not_started, attempt=1)
        return
    feedback: str | None = None
    for number in range(1, tries + 1):
        stop = stop_reason()
        if stop is not None:
            run.not_started = stop
            context.events.event(item.id, "not started", stop, attempt=number)
            return
        try:
            attempt = run_attempt(context, item, number, feedback)
        except (WavegitError, OSError) as exc:
            # wavegit's own failure (a git step), not the item's: not counted, no further tries.
            attempt = Attempt(number, context.config.worker, "", context.base, utc_now(), utc_now(),
                              error=one_line(str(exc)), counted=False)
        run.attempts.append(attempt)
        if attempt.commit is not None:
            context.events.event(item.id, "verified", attempt=number)
            return
        context.events.event(item.id, "failed", attempt.error or "", attempt=number)
        if attempt.launch_failed or not attempt.counted:
            return
        feedback = attempt.feedback
        # The retry needs the item branch, which git lets only one worktree have.
        context.workspaces.release(context.spec(item, number))


def run_attempt(context: AttemptContext, item: tracker.Item, number: int, feedback: str | None) -> Attempt:
    """Attempt ``number`` of ``item``: its worker in its worktree, then :func:`verify`."""
    stem = f"{item.id}-{number}"
    logs = context.logs
    logs.mkdir(parents=True, exist_ok=True)
    prompt = prompt_with_feedback(item.prompt, feedback)
    prompt_file = logs / f"{stem}.prompt"
    prompt_file.write_text(prompt, encoding="utf-8")
    feedback_file = logs / f"{stem}.feedback" if feedback else None
    if feedback_file is not None:
        feedback_file.write_text(feedback or "", encoding="utf-8")
    cost_file = logs / f"{stem}.cost.json"
    cost_file.unlink(missing_ok=True)
    config = context.config
    attempt = Attempt(number, config.worker, hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                      context.base, utc_now(), log_path=logs / f"{stem}.log")
    assert attempt.log_path is not None
    env = runner.worker_env(os.environ, item_id=item.id, wave_id=context.wave_id, prompt_file=prompt_file,
                            cost_file=cost_file, feedback_file=feedback_file, owns=item.owns,
                            pass_github_token=config.worker_github_token)
    spec = context.spec(item, number)
    path = spec.path
    try:
        context.workspaces.take(spec)
        context.events.event(item.id, "started", attempt=number)
        result = runner.run_process(runner.worker_argv(config.worker), cwd=path, env=env,
                                    stdin_text=prompt, log_path=attempt.log_path,
                                    timeout_s=config.timeout_s,
                                    idle_timeout_s=config.idle_timeout_s, cancel=context.cancel)
        attempt.exit_code, attempt.killed = result.exit_code, result.killed
        attempt.cost = runner.read_cost(cost_file, attempt.log_path, config.worker)
        if attempt.cost:
            context.spend.add(attempt.cost)
        verify(context, item, path, attempt, result, env)
    finally:
        attempt.finished_at = utc_now()
    if attempt.commit is None and attempt.counted:
        attempt.feedback = feedback_text(attempt)
    return attempt


def verify(context: AttemptContext, item: tracker.Item, path: Path, attempt: Attempt,
           result: runner.ProcessResult, env: dict[str, str]) -> None:
    """Judge a finished worker (exit, ownership, a change, the item's test); commit when verified."""
    if result.launch_error is not None:
        context.stop_batch(result.launch_error)
        attempt.error, attempt.counted, attempt.launch_failed = result.launch_error, False, True
        return
    if attempt.failed("worker", result):
        return
    root, base, config = context.repo.root, context.base, context.config
    tree = worktree.stage_all(path)
    attempt.files_changed = worktree.changed_paths(root, base, tree)
    attempt.violations = [p for p in attempt.files_changed
                          if not any(matches(pattern, p) for pattern in item.owns)]
    if attempt.violations:
        shown = ", ".join(attempt.violations[:5]) + (" …" if len(attempt.violations) > 5 else "")
        attempt.error = f"ownership violation: changed {shown}, not owned by {item.id}; changes discarded"
        return
    if not attempt.files_changed:
        attempt.error = "the worker changed nothing"
        return
    attempt.test_log_path = context.logs / f"{item.id}-{attempt.number}.test.log"
    context.events.event(item.id, "testing", attempt=attempt.number)
    test = runner.run_process(runner.command_argv(item.test), cwd=path, env=env, stdin_text="",
                              log_path=attempt.test_log_path, timeout_s=config.timeout_s,
                              idle_timeout_s=config.idle_timeout_s, cancel=context.cancel)
    attempt.test_exit = test.exit_code
    if attempt.failed("test", test):
        return
    trailers = worktree.Trailers(item.id, context.wave_id, attempt.prompt_sha256)
    attempt.message = worktree.item_message(item.title, trailers)
    attempt.commit = gitops.commit_tree(root, tree, [base], attempt.message)
    worktree.set_branch(root, worktree.item_branch(context.wave_id, item.id), attempt.commit)
