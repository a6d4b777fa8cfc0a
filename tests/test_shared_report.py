"""Reports travel with the repository: a wave that pushed its branch pushed its report too, and `wavegit
report W` in another clone fetches it; `ls` and `status` point to it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.reliability import wavegit_in_process as wavegit_here
from tests.helpers.repos import git, wavegit
from tests.helpers.wave import item, make_wave_repo
from wavegit.engine import shared_report


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
