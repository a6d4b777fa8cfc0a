"""The GitHub Action's last step: a finished command becomes step outputs, a job summary and annotations.

``action.yml`` runs the command with its stdout and stderr in files, then ``python -m wavegit.github.action
COMMAND EXIT_CODE STDOUT_FILE STDERR_FILE``. What comes out (the fenced log, the annotations, the outputs, the
summary, the step's exit code: 3 passes with a warning) is docs/action.md, "Outputs" and "Exit codes".
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wavegit.core.errors import EXIT_BAD_INPUT, EXIT_HALTED, EXIT_OK, EXIT_WORK_FAILED, UsageError
from wavegit.core.repo import discover
from wavegit.model.report import ReportError, WaveReport
from wavegit.model.report_markdown import to_markdown
from wavegit.model.select import Plan, Skip

OUTPUT_NAMES = ("wave-id", "pr", "success", "report-path", "exit-code", "matrix", "result-dir",
                "verdict-path")
# The commands that print a wave's report JSON (with --json), and the outputs it fills.
REPORTING = ("run", "collect")
_PROBLEM = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<message>.+)$")
_MEANING = {EXIT_OK: "ok", EXIT_WORK_FAILED: "the work failed", EXIT_BAD_INPUT: "bad input or configuration",
            EXIT_HALTED: "halted or over budget", 4: "lost a compare-and-swap race"}


@dataclass(frozen=True)
class StepResult:
    outputs: dict[str, str]
    summary: str
    annotations: list[str]
    exit_code: int


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF encoded so that text cannot start a new command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation(level: str, message: str, **properties: str) -> str:
    props = ",".join(f"{key}={escape_data(value).replace(':', '%3A').replace(',', '%2C')}"
                     for key, value in properties.items())
    return f"::{level}{' ' + props if props else ''}::{escape_data(message)}"


# What git prints when GitHub refuses a push to a protected branch (``GH006``, "protected branch hook
# declined"): said once, with the fix, instead of git's lines.
_PROTECTED = re.compile(r"GH006|protected branch", re.IGNORECASE)
PROTECTED_FIX = ("GitHub refused the push: the branch is protected. Give the tracker a branch of its own "
                 "(tracker_branch: wavegit-tracker in .wavegit/config.yaml, then git push origin "
                 "main:wavegit-tracker) that this token may push to, or let the token push (a GitHub App "
                 "allowed by the branch rules); see docs/action.md, setup checklist")


def error_annotations(level: str, command: str, stderr: str) -> list[str]:
    """One annotation per line wavegit printed on stderr; validation problems are located in their file; a
    protected-branch refusal is one error naming the fix."""
    found = []
    lines = [line for line in (raw.strip() for raw in stderr.splitlines()) if line]
    if any(_PROTECTED.search(line) for line in lines):
        found.append(annotation("error", PROTECTED_FIX, title=f"wavegit {command}"))
        lines = [line for line in lines
                 if not _PROTECTED.search(line) and not line.startswith(("remote:", "!"))]
    for line in lines:
        match = _PROBLEM.match(line)
        if match:
            found.append(annotation(level, match["message"], file=match["path"], line=match["line"],
                                    col=match["col"], title=f"wavegit {command}"))
        else:
            found.append(annotation(level, line, title=f"wavegit {command}"))
    return found


def report_annotations(report: WaveReport) -> list[str]:
    """Why a finished wave is not a success: each item that was not verified, then the wave's notes."""
    found = [annotation("error", f"{item.id}: {item.status}" + (f" ({item.error})" if item.error else ""),
                        title=f"wavegit wave {report.wave_id}")
             for item in report.items if not item.verified or item.ownership_violations]
    found += [annotation("warning", note, title=f"wavegit wave {report.wave_id}") for note in report.notes]
    return found


def parse_plan(text: str) -> Plan:
    """``wavegit plan --json`` output; ValueError when it is not that shape."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    selected, skipped, sha = data.get("selected"), data.get("skipped"), data.get("tracker_sha")
    if not (isinstance(selected, list) and all(isinstance(i, str) for i in selected)):
        raise ValueError("'selected' is not a list of ids")
    if not (isinstance(skipped, list) and all(isinstance(s, dict) and isinstance(s.get("id"), str)
                                              and isinstance(s.get("reason"), str) for s in skipped)):
        raise ValueError("'skipped' is not a list of {id, reason}")
    if not isinstance(sha, str):
        raise ValueError("'tracker_sha' is not a string")
    return Plan(tuple(selected), tuple(Skip(s["id"], s["reason"]) for s in skipped), sha)


def _cell(text: str) -> str:
    return html.escape(text).replace("|", "\\|")


def _code(text: str) -> str:
    return f"<code>{_cell(text)}</code>"


def plan_markdown(plan: Plan) -> str:
    selected = ", ".join(_code(item_id) for item_id in plan.selected) or "nothing is ready"
    lines = [f"### wavegit plan: {len(plan.selected)} selected", "",
             f"Tracker blob {_code(plan.tracker_sha[:12])}. Selected: {selected}."]
    if plan.skipped:
        lines += ["", "| skipped | reason |", "|---|---|"]
        lines += [f"| {_code(skip.id)} | {_cell(skip.reason)} |" for skip in plan.skipped]
    return "\n".join(lines) + "\n"


def command_markdown(command: str, exit_code: int, stdout: str, stderr: str) -> str:
    meaning = _MEANING.get(exit_code, "unexpected exit code")
    lines = [f"### wavegit {command}: exit {exit_code} ({meaning})", ""]
    text = "\n".join(part for part in (stdout.strip(), stderr.strip()) if part)
    # <pre> ends only at </pre>, which html.escape makes impossible for the command's output to forge.
    lines.append(f"<pre>{html.escape(text)}</pre>" if text else "_no output_")
    return "\n".join(lines) + "\n"


def report_path(report: WaveReport, cwd: Path) -> str:
    """Where ``wavegit run`` wrote this report's JSON (wave.write_report), or '' when it is not there."""
    try:
        path = discover(cwd).report_file(report.wave_id, ".json")
    except UsageError:
        return ""
    return str(path) if path.is_file() else ""


def run_reports(stdout: str) -> list[WaveReport]:
    """What ``wavegit run --json`` printed: one report, or (``--continuous``) one compact report per line."""
    try:
        return [WaveReport.from_json(stdout)]
    except ReportError:
        lines = [line for line in stdout.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        return [WaveReport.from_json(line) for line in lines]


def claim_outputs(stdout: str) -> dict[str, str]:
    """``wavegit claim``'s wave and matrix as outputs; ValueError when it printed something else."""
    data = json.loads(stdout)
    if not (isinstance(data, dict) and isinstance(data.get("wave"), str)
            and isinstance(data.get("matrix"), dict)):
        raise ValueError("not {wave, matrix}")
    return {"wave-id": data["wave"], "matrix": json.dumps(data["matrix"])}


def step_exit_code(exit_code: int) -> int:
    return EXIT_OK if exit_code == EXIT_HALTED else exit_code


def finish(command: str, exit_code: int, stdout: str, stderr: str, cwd: Path) -> StepResult:
    """Outputs, summary, annotations and the step's exit code for one finished ``wavegit COMMAND``."""
    level = "warning" if exit_code == EXIT_HALTED else "error"
    annotations = error_annotations(level, command, stderr) if exit_code != EXIT_OK else []
    outputs = dict.fromkeys(OUTPUT_NAMES, "")
    outputs.update(success="true" if exit_code == EXIT_OK else "false", **{"exit-code": str(exit_code)})
    summary = ""
    if command == "claim" and exit_code == EXIT_OK:
        try:
            outputs.update(claim_outputs(stdout))
        except ValueError as exc:
            annotations.append(annotation("error", f"wavegit claim printed no readable claim: {exc}"))
            outputs["success"], exit_code = "false", EXIT_WORK_FAILED
    elif command in REPORTING and stdout.strip():
        try:
            reports = run_reports(stdout)
        except ReportError as exc:
            annotations.append(annotation("error", f"wavegit {command} printed no readable report: {exc}"))
            exit_code = exit_code or EXIT_WORK_FAILED
        else:
            waves = [report for report in reports if report.wave_id]
            if not waves:
                stdout = ""  # refused before its claim (no wave): its message on stderr is the summary
            else:
                last = waves[-1]
                outputs.update({"wave-id": last.wave_id, "pr": "" if last.pr is None else str(last.pr),
                                "success": "true" if all(wave.success for wave in waves) else "false",
                                "report-path": report_path(last, cwd)})
                summary = "\n".join(to_markdown(wave) for wave in waves)
                for wave in waves:
                    if not wave.success:
                        annotations += report_annotations(wave)
    elif command == "plan" and exit_code == EXIT_OK:
        try:
            summary = plan_markdown(parse_plan(stdout))
        except ValueError as exc:
            annotations.append(annotation("error", f"wavegit plan printed no readable plan: {exc}"))
            outputs["success"], exit_code = "false", EXIT_WORK_FAILED
    if exit_code != EXIT_OK and not annotations:
        annotations.append(annotation(level, f"wavegit {command} exited {exit_code}"))
    return StepResult(outputs, summary or command_markdown(command, exit_code, stdout, stderr), annotations,
                      step_exit_code(exit_code))


def write_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append ``name<<DELIMITER`` blocks: safe for any value, a newline included."""
    with path.open("a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def fenced(text: str) -> str:
    """``text`` for the job log, inert: the runner obeys any line that starts with ``::`` (an annotation,
    ``::set-output``, ``::stop-commands::``), and a command's output quotes file names and messages from
    others. ``::stop-commands::TOKEN`` turns that off until ``::TOKEN::``, a token nobody can guess."""
    token = f"wavegit-{uuid.uuid4().hex}"
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    env = os.environ if environ is None else environ
    if len(args) != 4 or not args[1].lstrip("-").isdigit():
        usage = "usage: python -m wavegit.github.action COMMAND EXIT_CODE STDOUT_FILE STDERR_FILE"
        print(annotation("error", usage))
        return EXIT_BAD_INPUT
    command, exit_code = args[0], int(args[1])
    stdout = Path(args[2]).read_text(encoding="utf-8", errors="replace")
    stderr = Path(args[3]).read_text(encoding="utf-8", errors="replace")
    sys.stdout.write(fenced(stdout + stderr))
    result = finish(command, exit_code, stdout, stderr, Path.cwd())
    # Where work left its bundle and gate-test its verdict (the action's script chose the paths).
    for output, variable in (("result-dir", "WAVEGIT_ACTION_RESULT_DIR"),
                             ("verdict-path", "WAVEGIT_ACTION_VERDICT_PATH")):
        result.outputs[output] = env.get(variable, "")
    for line in result.annotations:
        print(line)
    if env.get("GITHUB_OUTPUT"):
        write_outputs(Path(env["GITHUB_OUTPUT"]), result.outputs)
    if env.get("GITHUB_STEP_SUMMARY"):
        with Path(env["GITHUB_STEP_SUMMARY"]).open("a", encoding="utf-8") as handle:
            handle.write(result.summary)
    sys.stdout.flush()
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
