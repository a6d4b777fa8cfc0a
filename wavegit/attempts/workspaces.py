"""A wave's attempt trees, made ahead of the attempts that need them, removed in the background.

A small pool of background threads makes each tree (:func:`wavegit.attempts.workspace.create`: a repository of
its own, so no lock is shared with the scheduler's git calls) and records its ``lstat`` baseline before its
attempt asks for it, so an item thread's worker slot goes from one worker straight to the next. A tree
asked for before a background thread began it is made by the thread that asks (the first batch's trees
are made side by side, not two at a time). The wave bounds how far ahead it prepares, and has trees,
test checkouts and private directories removed in the background once their attempt is done with them
(:meth:`Workspaces.discard`); the rest go in the wave's cleanup, all at once. :meth:`Workspaces.close`
joins the work begun and drops the rest, which that cleanup covers. The base a tree is later compared
against (:class:`wavegit.attempts.snapshot.Base`) is read once per start commit, also in the background, and
so is ``git init``'s git directory (:class:`wavegit.attempts.workspace.Skeleton`), once per wave. Trees
borrow objects only from the wave's store (:mod:`wavegit.attempts.objectstore`), made before the first tree.
An attempt waiting for its worker slot is told when its tree is made (:meth:`Workspaces.when_made`), and
then starts its sandboxes, parked (:mod:`wavegit.engine.launchpad`).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from wavegit.attempts import objectstore, snapshot, workspace
from wavegit.core import git
from wavegit.core.errors import WavegitError

WORKTREE_THREADS = 2
"""Background threads making trees."""


@dataclass(frozen=True)
class Spec:
    """One tree to make: where, on which branch name (of its own repository), from which commit."""

    path: Path
    branch: str
    start: str


@dataclass(frozen=True)
class Ready:
    """A tree as wavegit left it for its worker: what to compare it with when the worker is done."""

    path: Path
    loading: Future[snapshot.Base]
    """The base, read in the background while the worker runs (the worker does not wait for it)."""
    untouched: Mapping[str, snapshot.StatKey]

    @property
    def base(self) -> snapshot.Base:
        return self.loading.result()


class Workspaces:
    def __init__(self, repo_root: Path, objects: Path | None = None, *, kept: int = 0) -> None:
        """``objects``: the scheduler's object directory when known (else asked of git). ``kept``: how many
        discarded paths wait for the wave's cleanup (:meth:`discard`)."""
        self._root = repo_root
        self._kept = kept
        self._discarded: list[Path] = []
        self._removing: list[Future[None]] = []
        self._objects = objects or workspace.objects_dir(repo_root)
        self._pool = ThreadPoolExecutor(max_workers=WORKTREE_THREADS, thread_name_prefix="wavegit-worktree")
        self._made: dict[Path, Future[Ready]] = {}
        self._taken: set[Path] = set()
        """Trees an attempt has taken: never made again (:meth:`prepare`) under its worker."""
        self._launched = 0
        self._after: list[tuple[int, Spec]] = []
        """Trees to prepare once that many workers have started (:meth:`prepare_after`)."""
        self._watchers: dict[Path, list[Callable[[], None]]] = {}
        """Called once the tree at the path is made in the background (:meth:`when_made`)."""
        self._preparing: dict[Path, Future[bool]] = {}
        """Test checkouts being made at their base (:meth:`prepare_checkout`), waited for when discarded."""
        self._bases: dict[str, Future[snapshot.Base]] = {}
        self._skeletons: dict[Path, workspace.Skeleton | None] = {}
        self._warmed = False
        self._base_lock = threading.Lock()
        # One lock each: the store and the skeleton are made apart.
        self._skeleton_lock = threading.Lock()
        self._store_lock = threading.Lock()
        self._guard = threading.Lock()

    @property
    def objects(self) -> Path:
        """The scheduler's object directory, which every tree borrows from."""
        return self._objects

    def prepare(self, spec: Spec) -> None:
        """Start making ``spec``'s tree in the background (once)."""
        with self._guard:
            self._warm(spec)
            # Taken already: its attempt got a slot before the launches its preparation waited for (a worker
            # that exited at once gave its slot back while its sibling's was still being set up).
            if spec.path not in self._made and spec.path not in self._taken:
                self._made[spec.path] = self._pool.submit(self._make, spec)
                for tell in self._watchers.pop(spec.path, []):
                    self._made[spec.path].add_done_callback(_calling(tell))

    def reserve(self, spec: Spec) -> bool:
        """Keep ``spec``'s tree for the caller to make (:meth:`take`), its directory made empty now for a
        sandbox to bind: never prepared in the background. False when a preparation was begun (the caller
        takes that tree): both would make it in that directory at once (`File exists`)."""
        with self._guard:
            if spec.path in self._made or spec.path in self._taken:
                return False
            self._taken.add(spec.path)
            self._warm(spec)
        spec.path.mkdir(parents=True, exist_ok=True)
        return True

    def when_made(self, spec: Spec, tell: Callable[[], None]) -> None:
        """Call ``tell`` (from any thread) once ``spec``'s tree is made in the background, or failed; never
        when it is made by :meth:`take` instead."""
        with self._guard:
            made = self._made.get(spec.path)
            if made is None:
                self._watchers.setdefault(spec.path, []).append(tell)
                return
        made.add_done_callback(_calling(tell))

    def prepare_after(self, launched: int, spec: Spec) -> None:
        """Prepare ``spec`` once ``launched`` workers have started, or will not (:meth:`launched`): ahead of
        its attempt, but after the launches of the batch before (on two cores, making the next batch's trees
        while a batch's trees are made and its sandboxes built delayed its launches by 20-80 ms)."""
        with self._guard:
            self._after.append((launched, spec))

    def launched(self) -> None:
        """A worker of the wave has started, or will not: the trees due after that many are prepared."""
        with self._guard:
            self._launched += 1
            due = [later for launched, later in self._after if launched <= self._launched]
            self._after = [(launched, later) for launched, later in self._after if launched > self._launched]
        for later in due:
            self.prepare(later)

    def take(self, spec: Spec) -> Ready:
        """``spec``'s tree, ready: the one prepared earlier, or made now (here, when its preparation had not
        begun); its failure is raised here."""
        with self._guard:
            self._warm(spec)
            made = self._made.pop(spec.path, None)
            self._taken.add(spec.path)
        if made is None or made.cancel():
            return self._make(spec)
        return made.result()

    def prepare_checkout(self, base: str, path: Path) -> Future[bool]:
        """Begin, in the background, the test checkout at ``path`` (an empty directory a parked sandbox may
        bind) as a checkout of ``base``, for :meth:`test_checkout` to move to the worker's commit: the
        files and git directory it shares with the base are written while the worker runs, not after it.
        Its result: whether it is ready so (False: ``path`` is left empty)."""
        prepared = self._pool.submit(self._prepared_checkout, base, path)
        with self._guard:
            self._preparing[path] = prepared
        return prepared

    def _prepared_checkout(self, base: str, path: Path) -> bool:
        skeleton = self._skeleton(path.parent)
        if skeleton is None:
            return False  # `git init`'s branch would be a loose ref, which advance does not move
        store = objectstore.store_of(path.parent)
        try:
            workspace.test_checkout(store, base, path, skeleton, objectstore.history(store))
        except (WavegitError, OSError):
            workspace.empty(path)  # made again at the test, from scratch
            return False
        return True

    def test_checkout(self, commit: str, path: Path, *, narrow: bool = True, written: Sequence[str] = (),
                      prepared: Future[bool] | None = None, changed: Sequence[str] = ()) -> Path:
        """:func:`wavegit.attempts.workspace.test_checkout` of ``commit`` (a worker's, on a tree of this
        wave folder's) at ``path``, its git directory written from the wave's skeleton; ``narrow``: reading
        no object but ``commit``'s own (``written``, when its read listed them) and the wave's store
        (:func:`wavegit.attempts.objectstore.narrow`). Unsandboxed, its test could read the scheduler's
        repository directly: no narrowing.

        ``prepared``: :meth:`prepare_checkout` of ``path`` (sandboxed only: unsandboxed, the worker could
        have written into it), moved to ``commit`` once it holds the commit's objects, unless ``changed``
        (the paths the commit changes) holds a ``.gitattributes``, which may change how the files the two
        share are written out; then, or when it failed, made anew in the same directory."""
        store = objectstore.store_of(path.parent)
        if prepared is not None:
            if narrow and _succeeded(prepared) and not any(map(_attributes, changed)):
                objectstore.narrow(path, commit, store, self._objects, written)
                workspace.advance(path, commit, objectstore.history(store))
                return path
            workspace.empty(path)
        workspace.test_checkout(self._objects, commit, path, self._skeleton(path.parent),
                                objectstore.history(store))
        if narrow:
            objectstore.narrow(path, commit, store, self._objects, written)
        return path

    def idents(self) -> tuple[str, str]:
        """The author and committer git records here now (:func:`wavegit.core.git.idents`)."""
        return git.idents(self._root)

    def release(self, spec: Spec) -> None:
        """Remove ``spec``'s tree in the background."""
        self.discard(spec.path)

    def discard(self, path: Path) -> None:
        """Have the tree or directory at ``path`` (in the wave's folders) removed: left to the wave's cleanup,
        which moves those folders to the trash that is emptied once the command has returned, unless more
        than ``kept`` paths wait so: then the oldest is removed in the background. Deleting while the wave
        launches and reads back its attempts took 50 ms of a 16-item wave on this machine's disk (mounted
        with ``discard``, each file's blocks trimmed as it goes, and each new inode searched for past the
        recently freed ones); the bound keeps the space a long wave holds to two batches' worth, and once
        the disk is less than a fifth free every path waiting goes at once: what a worker left (gigabytes of
        ignored files) must not fill the disk for its siblings. A path already waiting waits once (a test
        checkout is discarded by its attempt and by its launch pad)."""
        with self._guard:
            preparing = self._preparing.pop(path, None)
        # A checkout still being made would go on writing there once removed (the directory made again).
        if preparing is not None and not preparing.cancel():
            wait([preparing])
        with self._guard:
            if path in self._discarded:
                return
            self._discarded.append(path)
            keep = self._kept if self._kept and _roomy(path.parent) else 0
            over = self._discarded[:-keep] if keep else list(self._discarded)
            del self._discarded[:len(over)]
            self._removing = [*(f for f in self._removing if not f.done()),
                              *(self._pool.submit(workspace.remove, old) for old in over)]

    def flush(self) -> None:
        """Remove, here and now, every discarded path still waiting for the wave's cleanup, and wait for the
        removals under way: before an attempt that found the disk full is judged, what finished attempts left
        must not be what excuses it."""
        with self._guard:
            waiting, self._discarded = self._discarded, []
            removing, self._removing = self._removing, []
        for path in waiting:
            workspace.remove(path)
        wait(removing)

    def close(self) -> None:
        """Drop the work not begun yet and wait for the rest (it may fail): the wave's cleanup follows and
        removes whatever trees are left in one go."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._guard:
            self._made.clear()
            self._after.clear()
            self._watchers.clear()

    def warm(self, spec: Spec) -> None:
        """Begin, in the background, what every tree like ``spec`` needs (its store, ``git init``'s skeleton)
        and what the first attempts to verify need (the base, the identities): before the first tree is
        asked for, while the first sandboxes are built."""
        with self._guard:
            self._warm(spec)

    def _warm(self, spec: Spec) -> None:
        """Once (under the guard): :meth:`warm`."""
        if not self._warmed:
            self._warmed = True
            # The store and the skeleton first: every tree needs both.
            self._pool.submit(self._store, spec)
            self._pool.submit(self._skeleton, spec.path.parent)
            self._base(spec)
            self._pool.submit(self.idents)

    def _base(self, spec: Spec) -> Future[snapshot.Base]:
        with self._base_lock:
            if spec.start not in self._bases:
                rules = spec.path.parent / f"_ignore-rules-{spec.start[:12]}"
                self._bases[spec.start] = self._pool.submit(snapshot.Base.load, self._root, spec.start, rules)
            return self._bases[spec.start]

    def _skeleton(self, folder: Path) -> workspace.Skeleton | None:
        """What ``git init`` writes in ``folder`` (a wave's folder of trees), captured there once."""
        with self._skeleton_lock:
            if folder not in self._skeletons:
                folder.mkdir(parents=True, exist_ok=True)
                workspace.fence(folder)
                self._skeletons[folder] = workspace.Skeleton.capture(folder / "_skeleton")
            return self._skeletons[folder]

    def _store(self, spec: Spec) -> Path:
        """The wave folder's object store, holding what ``spec``'s start reaches (made once)."""
        with self._store_lock:
            return objectstore.ensure(self._root, spec.path.parent, spec.start, self._objects)

    def _make(self, spec: Spec) -> Ready:
        loading = self._base(spec)
        store = self._store(spec)
        workspace.create(store, spec.path, start=spec.start, branch=spec.branch,
                         skeleton=self._skeleton(spec.path.parent), history=objectstore.history(store),
                         as_stored=True)
        return Ready(spec.path, loading, snapshot.baseline(spec.path))


KEPT_WHILE_FREE = 0.2
"""The share of the disk that must stay free for discarded paths to wait for the wave's cleanup."""


def _attributes(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == ".gitattributes"


def _succeeded(prepared: Future[bool]) -> bool:
    try:
        return prepared.result()
    except CancelledError:
        return False  # the pool was shut down: the wave is stopping


def _roomy(folder: Path) -> bool:
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return False
    return usage.free >= usage.total * KEPT_WHILE_FREE


def _calling(tell: Callable[[], None]) -> Callable[[Future[Ready]], None]:
    return lambda _: tell()
