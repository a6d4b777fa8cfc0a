"""The wave engine: a wave from its claim to its report.

1. **Preflight and claim** (:mod:`.claim`): one compare-and-swap commit: its ``apply`` checks
   ``.wavegit/HALT`` and the day's budget on the snapshot it edits, marks ``todo`` items with no attempt left
   ``failed`` (``max_attempts`` is a hard cap), re-plans with the (deterministic) planner (``run --only``:
   :mod:`.only`, the named items or exit 2), runs the preflight (:mod:`.preflight`: a valid tracker, a worker
   that resolves, tests that split, ids that name branches; else exit 2) and marks the chosen items
   ``in_progress`` with ``wave`` and ``claimed_at``. Halted or over budget: exit 3, nothing claimed. Nothing
   selected: an empty report, exit 0. A wave that claimed never exits 3 (:func:`.outcome.exit_code`).
2. **The wave branch** ``wavegit/<wave-id>`` starts at the base branch head (the claim commit when the
   tracker lives on the base branch). Nothing on it edits the tracker.
3. **Each item** (:mod:`.attempt`) runs in a fresh worktree on ``wavegit/items/<wave-id>/<item-id>``,
   ``concurrency`` workers at once (:mod:`.slots`: a slot is held while the worker runs, so the next worker
   starts while the previous attempt is read back and tested), its attempts one after another, at most
   ``attempts`` per wave and what ``max_attempts`` leaves. First attempts' worktrees are made up to one batch
   ahead, in the background (:mod:`wavegit.attempts.workspaces`); a worktree is removed in the background once
   read back, else by the wave's cleanup, all at once. Before every launch, once it has its slot: HALT re-read
   (a read under ``HALT_FRESH_S`` old, the claim's included, is shared by a burst of launches), the wave
   budget (with what is left of the day's), cancellation.
   An attempt is verified when the worker exits 0, every changed path (new, deleted, both sides of a
   rename, mode changes, symlinks as paths) is owned by the item, something changed, and the item's test
   exits 0. Otherwise its changes are discarded and the next attempt, in a new worktree, gets the reason
   (test output tail, violations, timeout) in ``$WAVEGIT_FEEDBACK_FILE`` and appended to the prompt.
   A worker that cannot be launched stops the batch: running workers are cancelled, nothing new starts.
4. **Collect** (:func:`.wave.collect`): verified item commits (trailers ``Wavegit-Item``, ``Wavegit-Wave``,
   ``Wavegit-Prompt-Sha256``, ``Wavegit-Worker``) are replayed onto the wave branch in tracker order,
   ``wave_test`` runs on the result, the branch is pushed (unless ``--no-push`` or there is no remote), then
   the wave's :class:`.pipeline.Delivery` (the GitHub side, ``wavegit.github.publish``) may open its pull
   request; its number is recorded as ``pr`` on the verified items.
5. **Record** (:func:`.outcome.record`) is one compare-and-swap commit with a ``Wavegit-Cost`` trailer; each
   item's new status comes from :func:`wavegit.model.lifecycle.record`: verified items go to ``review``;
   failed items to ``todo`` with ``attempts`` and ``last_error``, or ``failed`` once their total attempts
   reach ``max_attempts``; items never started (halt, budget, a launch failure) back to ``todo`` with
   ``attempts`` unchanged. Verified items go to ``review`` even without a pull request; ``wavegit sync`` marks
   them ``done`` when the wave branch is merged into the base branch. A failed ``wave_test`` leaves them in
   ``review`` (the combination is for a human to judge) but the wave is not a success. When the wave branch
   could not be built or pushed, its items go back to ``todo``.
6. **Report** (:mod:`.outcome`): JSON and Markdown under ``<git dir>/wavegit/reports/``, its ``phase`` the
   step it ended in (``done`` when none stopped it) and ``error`` what stopped it; worktrees are removed
   and item branches deleted whatever happened (in the background while the wave branch is combined and
   pushed); then the delivery posts the report.

:mod:`.pipeline` runs these steps; its extension points are declared: an :class:`.pipeline.ItemSource` (the
items run here, or their results are collected from scale-out runners) and a :class:`.pipeline.Delivery`.
:mod:`.rolling` (``run --continuous``) keeps several waves in flight, each one an item source that is handed
its items claim by claim, on worker slots they all share.

What a ``kill -9`` of the scheduler can leave (each commit is atomic, the branch is pushed before the
record): nothing at all; the claim only (items ``in_progress`` with this wave, no remote wave branch:
``sync`` returns them to ``todo`` once ``lease_ttl_s`` has passed); the claim and a pushed wave branch whose
commits' ``Wavegit-Item`` trailers name the finished items (``sync`` recovers them from it); or the full
record. Leftover worktrees and item branches are pruned by ``sync``.
"""
