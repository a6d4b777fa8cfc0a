"""A wave's report, pushed with the wave so that every clone can read it: ``refs/wavegit/reports/<wave>``.

The ref is a parentless commit whose tree holds ``report.json`` (the report ``wavegit run`` writes under
``<git dir>/wavegit/reports/``). ``wavegit run`` pushes it at the wave's end whenever the wave pushed its
branch (and the remote is there); ``wavegit report W`` in a clone that has no such file fetches that one ref
and keeps a copy in its own reports folder.

Why a ref of its own rather than a file on the tracker branch: a report is written once, at the end, by
the wave alone, and read only when asked for. On the tracker branch it would take a compare-and-swap commit
racing every other writer, and every fetch of the tracker (each ``plan`` refresh, each claim) would carry
every report ever written; a ref outside ``refs/heads/`` is fetched only by name, and only by whoever wants
that report. The push goes without the pre-push hook: it changes no file of the repository.
"""

from collections.abc import Sequence
from pathlib import Path

from wavegit.core import fastimport, git
from wavegit.core.git import WaveId
from wavegit.core.repo import Repo
from wavegit.model import report

REF_PREFIX = "refs/wavegit/reports/"
FILE = "report.json"


def ref(wave_id: WaveId) -> str:
    return f"{REF_PREFIX}{wave_id}"


def write(repo: Repo, rep: report.WaveReport, committer: str) -> str:
    """Write ``rep`` as this clone's copy of the wave's report ref, its commit by ``committer`` (``Name
    <email> <seconds> <tz>``); the refspec that pushes it (replacing what the remote holds)."""
    name = ref(rep.wave_id)
    text = (rep.to_json() + "\n").encode("utf-8", "backslashreplace").decode("utf-8")
    # One fast-import writes the blob, the tree and the parentless commit, and sets the ref (four git
    # processes before: hash-object, mktree, commit-tree, update-ref).
    stream = (f"feature done\nreset {name}\ncommit {name}\ncommitter {committer}\n"
              f"{fastimport.data(f'wavegit report {rep.wave_id}')}M 100644 inline {FILE}\n"
              f"{fastimport.data(text)}\ndone\n")
    git.fast_import(repo.root, stream, force=True)
    return f"+{name}:{name}"


def push(repo: Repo, remote: str, rep: report.WaveReport, committer: str, also: Sequence[str] = ()
         ) -> str | None:
    """Push ``rep`` as the wave's report ref (:func:`write`), and the refspecs ``also`` in the same push
    (the heartbeat's deletion); None, or why it failed."""
    refspecs, failed = list(also), None
    try:
        refspecs.insert(0, write(repo, rep, committer))
    except git.GitError as exc:
        # The report's ref cannot be written here (a ref where its folder would be): what rode with it goes
        # alone, or a settled wave's heartbeat stayed on the remote for good, no claim left to return it.
        failed = exc
    try:
        if refspecs:
            git.push(repo.root, remote, refspecs, no_verify=True)
    except git.GitError as exc:
        failed = failed or exc
    return None if failed is None else f"the report was not pushed to {remote} ({ref(rep.wave_id)}): {failed}"


def fetch(repo: Repo, remote: str | None, wave_id: WaveId) -> Path | None:
    """The wave's report fetched from ``remote`` (or this clone's ref) into the reports folder; its path,
    or None when neither has it."""
    root = repo.root
    if remote is not None:
        try:
            git.fetch(root, remote, [f"+{ref(wave_id)}:{ref(wave_id)}"])
        except git.GitError as exc:
            if not git.missing_remote_ref(exc):
                raise
    found = git.read_blob_at(root, f"{ref(wave_id)}:{FILE}")
    if found is None:
        return None
    repo.reports_dir.mkdir(parents=True, exist_ok=True)
    path = repo.report_file(wave_id, ".json")
    # The ref's bytes exactly: whoever may push forges it, and bytes that are not UTF-8 are the reader's to
    # refuse (a text write failed on them, leaving an empty copy read as the report from then on).
    path.write_bytes(found[1].encode("utf-8", "surrogateescape"))
    return path
