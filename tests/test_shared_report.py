"""Reports travel with the repository: a wave that pushed its branch pushed its report too, and `wavegit
report W` in another clone fetches it; `ls` and `status` point to it."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.core.repo import discover
from wavegit.engine import outcome, shared_report
from wavegit.engine.pipeline import run_wave
from wavegit.model.config import load_config
from wavegit.trackerbranch.store import GitStore


def test_a_waves_report_is_pushed_with_it_and_read_from_another_clone(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt wrong"], ["src/b.txt"])])
    ran = wavegit(remote.clone, "run", "--json")
    wave = json.loads(ran.stdout)["wave_id"]
    assert git(remote.origin, "cat-file", "-t", shared_report.ref(wave)) == "commit"
    other = remote.new_clone("other")
    assert not (other / ".git" / "wavegit" / "reports" / f"{wave}.json").exists()
    shown = wavegit_here(other, "report", wave)
    assert shown.returncode == 0, shown.stderr
    here = wavegit_here(remote.clone, "report", wave)
    # The same report; the attempt logs it names stay in the clone that ran the wave.
    assert shown.stdout.splitlines()[:-2] == here.stdout.splitlines()[:-2]
    assert shown.stdout.splitlines()[-1] == f"report: {other}/.git/wavegit/reports/{wave}.json"
    assert "why not:" in shown.stdout and "B" in shown.stdout
    assert json.loads(wavegit_here(other, "report", wave, "--json").stdout) == json.loads(ran.stdout)
    listed = wavegit_here(other, "ls", "--fetch")
    assert f"wave {wave} (A in review): its report is `wavegit report {wave}`" in listed.stderr
    status = wavegit_here(remote.clone, "status", wave)
    assert f"; its report: `wavegit report {wave}`" in status.stdout


def test_a_report_nobody_pushed_is_named_missing_here_and_on_the_remote(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    wave = json.loads(wavegit(remote.clone, "run", "--json", "--no-push").stdout)["wave_id"]
    missing = wavegit(remote.new_clone("other"), "report", wave)
    assert missing.returncode == 2
    assert (f"no report for wave {wave!r} in " in missing.stderr
            and f" nor on origin (refs/wavegit/reports/{wave})" in missing.stderr), missing.stderr


def test_the_report_ref_is_written_while_the_record_edits_the_tracker_and_lands_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both are ready before the wave's one push: the report's fast-import no longer runs before the record
    # begins (~6 ms of every wave's end).
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    recording = threading.Event()
    written_while_recording: list[bool] = []
    load_tracker, write = outcome.load_tracker, shared_report.write

    def recorded(*args: Any, **kwargs: Any) -> Any:
        recording.set()
        return load_tracker(*args, **kwargs)

    def written_once_recording(*args: Any, **kwargs: Any) -> str:
        written_while_recording.append(recording.wait(timeout=5))
        return write(*args, **kwargs)

    monkeypatch.setattr(outcome, "load_tracker", recorded)
    monkeypatch.setattr(shared_report, "write", written_once_recording)
    repo = discover(remote.clone)
    config = load_config(repo.root)
    rep = run_wave(repo, config, GitStore(repo, config)).report
    assert written_while_recording == [True] and rep.tracker_updated
    assert git(remote.origin, "cat-file", "-t", shared_report.ref(rep.wave_id)) == "commit"
    recorded_last = git(remote.origin, "log", "-1", "--format=%s", "main")
    assert recorded_last.startswith(f"wavegit: record wave {rep.wave_id}")


def test_a_report_ref_that_cannot_be_written_keeps_neither_the_record_nor_the_heartbeats_deletion_back(
        tmp_path: Path) -> None:
    # A ref where the reports' folder would be: the report's fast-import fails at the wave's end, in the
    # thread beside the record and again on its own.
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    git(remote.clone, "update-ref", "refs/wavegit/reports", git(remote.clone, "rev-parse", "HEAD"))
    ran = wavegit(remote.clone, "run", "--json")
    rep = json.loads(ran.stdout)
    wave = rep["wave_id"]
    assert ran.returncode == 0 and rep["tracker_updated"], ran.stderr
    assert any("the report was not pushed" in note for note in rep["notes"])
    assert git(remote.origin, "log", "-1", "--format=%s", "main").startswith(f"wavegit: record wave {wave}")
    assert git(remote.origin, "rev-parse", f"refs/heads/wavegit/{wave}") == rep["head_sha"]
    # Its claims are settled: no heartbeat is left for every other clone to show as a wave holding them.
    assert git(remote.origin, "for-each-ref", "refs/wavegit/") == ""
