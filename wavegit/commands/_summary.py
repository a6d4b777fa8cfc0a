"""A wave's report as the terminal shows it: ``run``, ``collect`` and ``report`` print the same lines."""

from wavegit.core.terminal import inert
from wavegit.model.report import ItemReport, WaveReport


def _attempt(item: ItemReport) -> str:
    """`` [attempt N]`` of the item's last attempt, as the tracker counts it; a launch that failed counted
    none."""
    if not item.attempt_records:
        return ""
    last = item.attempt_records[-1]
    return f" [attempt {last.attempt}]" if last.counted else " [no attempt counted]"


def summary(report: WaveReport) -> str:
    """The wave for the terminal: outcome, one line per item (with its attempt number, as the progress
    lines and the tracker count it), a failed wave test's log and output tail, the notes."""
    outcome = "success" if report.success else "not a success"
    if not report.items:
        count = len(report.skipped)
        head = f"wave {report.wave_id}: nothing selected ({count} item{'' if count == 1 else 's'} skipped)"
        return "\n".join([head, *(f"  {skip.id}: {skip.reason}" for skip in report.skipped)])
    lines = [f"wave {report.wave_id}: {outcome}: {report.verified_count} of {len(report.items)} verified"
             + (f", branch {report.branch}" if report.branch else "")]
    if report.tracker_source:
        lines.append(f"  tracker: {report.tracker_source}")
    lines += [f"  {item.id}: {item.status}" + (f" ({item.error})" if item.error else "") + _attempt(item)
              for item in report.items]
    test = report.wave_test
    if test.command and test.exit_code != 0:
        lines.append(f"  wave test {test.command!r} failed (exit {test.exit_code}); log: {test.log_path}")
        lines += [f"    | {line}" for line in test.log_tail.splitlines()]
    lines += [f"  note: {note}" for note in report.notes]
    return "\n".join(inert(line) for line in lines)
