"""wavegit.model.prompt: the worker is told its item inside the contract it works under
(``prompt_template``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.wave import item, make_wave_repo, run
from wavegit.core.errors import ValidationError
from wavegit.model import config, prompt, tracker

ITEM = tracker.Item(id="AUTH-1", title="Rate limit", prompt="Add a limiter costing $5.\n",
                    owns=("src/limiter.py", "tests/limiter/"), test="pytest -q tests/limiter")


def test_the_default_says_what_may_change_what_judges_it_and_that_the_rest_is_discarded() -> None:
    text = prompt.render("", ITEM)
    assert text.startswith("Add a limiter costing $5.\n\n---\n")
    assert "  - src/limiter.py\n  - tests/limiter/\n" in text
    assert "a change anywhere else fails the attempt and none of it is kept" in text
    assert "  pytest -q tests/limiter\n" in text and "item AUTH-1" in text


def test_a_custom_template_places_each_field_and_never_reads_the_items_text_as_a_template() -> None:
    text = prompt.render("[$id: $title] $prompt ($$ only: ${owns}) test: $test", ITEM)
    assert text == ("[AUTH-1: Rate limit] Add a limiter costing $5. ($ only:   - src/limiter.py\n"
                    "  - tests/limiter/) test: pytest -q tests/limiter")


@pytest.mark.parametrize(("template", "says"), [
    ("Do the work.", "must contain $prompt"),
    ("$prompt for $owner", "unknown placeholder(s) $owner"),
    ("$prompt costs 5$", "a '$' that starts no placeholder"),
])
def test_a_template_that_cannot_work_is_refused_at_its_line(tmp_path: Path, template: str, says: str) -> None:
    (tmp_path / ".wavegit").mkdir()
    (tmp_path / config.CONFIG_PATH).write_text(f"concurrency: 2\nprompt_template: {json.dumps(template)}\n")
    with pytest.raises(ValidationError) as raised:
        config.load_config(tmp_path, environ={})
    first = str(raised.value.problems[0])
    assert first.startswith(f"{config.CONFIG_PATH}:2:18: ") and says in first


def test_a_worker_in_a_real_wave_receives_the_contract_in_its_prompt(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = out / "env.jsonl"
    remote = make_wave_repo(tmp_path, [item("A", [f"env {log}", "write src/a.txt ok"], ["src/a.txt"])],
                            sandbox={"rw_paths": [str(out)]})
    assert run(remote.clone).exit_code == 0
    [seen] = [json.loads(line) for line in log.read_text().splitlines()]
    assert "You may change only these paths" in seen["prompt_file_text"]
    assert "  - src/a.txt\n" in seen["prompt_file_text"]
