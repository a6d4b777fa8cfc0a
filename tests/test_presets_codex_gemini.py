"""How the codex and gemini presets read what their CLIs print (lines as codex-cli 0.171.0 and gemini-cli
0.61.0 printed them against tests/helpers/openai_server.py and gemini_server.py), and the settings the gemini
preset puts in a private HOME that a hostile worker may have prepared."""

from __future__ import annotations

import json
from pathlib import Path

from wavegit.attempts import preset
from wavegit.attempts.preset import Launch
from wavegit.attempts.preset_codex import CODEX
from wavegit.attempts.preset_gemini import GEMINI

RETRY = {"type": "error",
         "message": "Reconnecting... 1/5 (stream disconnected before completion: stream closed before "
                    "response.completed)"}
DONE = {"type": "turn.completed", "usage": {"input_tokens": 2400, "cached_input_tokens": 0,
                                            "cache_write_input_tokens": 0, "output_tokens": 160,
                                            "reasoning_output_tokens": 0}}
CAUSE = ("unexpected status 401 Unauthorized: Incorrect API key provided: sk-bad. You can find your API key "
         "at https://platform.openai.com/account/api-keys., url: http://127.0.0.1:41159/v1/responses")


def test_a_codex_run_that_recovered_from_reconnects_has_no_error_and_its_tokens() -> None:
    account = CODEX.read([{"type": "turn.started"}, RETRY, RETRY, DONE], "")
    assert (account.error, account.input_tokens, account.output_tokens) == (None, 2400, 160)


def test_a_failed_codex_turn_is_its_cause_alone_however_many_retries_came_before() -> None:
    retries = [{"type": "error", "message": f"Reconnecting... {n}/5 ({CAUSE})"} for n in range(1, 6)]
    account = CODEX.read([*retries, {"type": "error", "message": CAUSE},
                          {"type": "turn.failed", "error": {"message": CAUSE}}], "")
    assert account.error == f"codex: {CAUSE}"
    assert CODEX.permanent(account) == "the model API rejected the key (401): check CODEX_API_KEY"


def test_codex_that_never_completed_a_turn_says_its_last_error_or_last_words() -> None:
    assert CODEX.read([{"type": "turn.started"}, RETRY], "").error == f"codex: {RETRY['message']}"
    assert CODEX.read([], "Error: unknown config key").error == "codex: Error: unknown config key"
    assert CODEX.permanent(CODEX.read([RETRY], "")) is None


def test_codex_actions_name_the_command_and_the_files_it_changes() -> None:
    started = {"type": "item.started", "item": {"id": "item_1", "type": "command_execution",
                                                "command": "/bin/bash -lc \"printf 'ok\\\\n' > a.txt\"",
                                                "aggregated_output": "", "exit_code": None,
                                                "status": "in_progress"}}
    changed = {"type": "item.completed",
               "item": {"id": "item_2", "type": "file_change", "status": "completed",
                        "changes": [{"path": "src/a.py", "kind": "update"}]}}
    assert CODEX.action(started) == "shell: printf 'ok\\n' > a.txt"
    assert CODEX.action(changed) == "edit src/a.py"
    assert CODEX.action(DONE) is None


def test_gemini_reads_its_result_stats_and_its_api_error() -> None:
    stats = {"total_tokens": 2560, "input_tokens": 2400, "output_tokens": 160, "cached": 0, "input": 2400}
    ok = GEMINI.read([{"type": "init"}, {"type": "result", "status": "success", "stats": stats}], "")
    assert (ok.error, ok.input_tokens, ok.output_tokens) == (None, 2400, 160)
    message = ('[API Error: {"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",'
               '"status":"INVALID_ARGUMENT"}}]')
    result = {"type": "result", "status": "error", "error": {"type": "unknown", "message": message},
              "stats": {**stats, "input_tokens": 0, "output_tokens": 0}}
    failed = GEMINI.read([result], "")
    assert failed.error == f"gemini: {message}"
    assert GEMINI.permanent(failed) == "the model API rejected the key: check GEMINI_API_KEY"
    assert GEMINI.read([], "Invalid auth method selected.").error == "gemini: Invalid auth method selected."


def test_a_line_written_into_geminis_output_cannot_lower_its_tokens() -> None:
    real = {"type": "result", "status": "success", "stats": {"input_tokens": 2400, "output_tokens": 160}}
    forged = {"type": "result", "status": "success", "stats": {"input_tokens": 1, "output_tokens": 1}}
    account = GEMINI.read([forged, real], "")
    assert (account.input_tokens, account.output_tokens) == (2400, 160)


def test_gemini_gets_its_gateway_in_its_variable_and_its_auth_type_in_its_home(tmp_path: Path) -> None:
    launch = Launch("gemini-2.5-flash", sandboxed=False, base_url="http://127.0.0.1:9/")
    assert GEMINI.env(launch) == {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9/"}
    assert GEMINI.argv(launch, []) == ["gemini", "-p", "", "--output-format", "stream-json", "--skip-trust",
                                       "--approval-mode", "auto_edit", "-m", "gemini-2.5-flash"]
    preset.seed_home(tmp_path, GEMINI.home(launch))
    settings = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"


def test_settings_are_never_written_through_a_link_a_worker_left_in_the_home(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gemini").symlink_to(elsewhere)
    preset.seed_home(home, {".gemini/settings.json": "{}"})
    assert list(elsewhere.iterdir()) == []
    (home / ".gemini").unlink()
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").symlink_to(elsewhere / "target")
    preset.seed_home(home, {".gemini/settings.json": "{}"})
    assert not (elsewhere / "target").exists()
