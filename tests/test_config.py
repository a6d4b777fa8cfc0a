"""Configuration: defaults, the file's schema, environment overrides, the generated commented file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.readme import key_table, readme_tables
from tests.helpers.repos import REPO_ROOT, git, make_remote_repo
from wavegit.core.errors import UsageError, ValidationError
from wavegit.core.repo import discover
from wavegit.model import config, governing


def _write(root: Path, text: str) -> Path:
    (root / ".wavegit").mkdir(exist_ok=True)
    (root / config.CONFIG_PATH).write_text(text)
    return root


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert config.load_config(tmp_path, environ={}) == config.Config()


def test_file_values_are_typed_and_nested(tmp_path: Path) -> None:
    _write(tmp_path, "worker: ./w.sh\nconcurrency: 2\ntimeout_s: 30\nbudget: {wave_usd: 1.5}\n"
                     "report_authors: [me]\nhook:\n  strict: yes\n")
    loaded = config.load_config(tmp_path, environ={})
    assert (loaded.worker, loaded.concurrency, loaded.timeout_s) == ("./w.sh", 2, 30.0)
    assert loaded.budget == config.Budget(wave_usd=1.5) and loaded.hook.strict is True
    assert loaded.report_authors == ("me",)


@pytest.mark.parametrize(("text", "where", "fragment"), [
    ("concurency: 2\n", "1:1", "did you mean 'concurrency'"),
    ("concurrency: 0\n", "1:14", "at least 1"),
    ("max_items: two\n", "1:12", "must be an integer"),
    ("timeout_s: 0\n", "1:12", "greater than 0"),
    ("attempts: -1\n", "1:11", "at least 1"),
    ("budget: {wave: 1}\n", "1:10", "did you mean 'wave_usd'"),
    ("hook: true\n", "1:7", "must be a mapping"),
    ("report_authors: bot\n", "1:17", "list of strings"),
    ("- a\n", "1:1", "must be a mapping"),
    ("worker: [\n", "2:1", "not valid YAML"),
])
def test_bad_config_file_is_located(tmp_path: Path, text: str, where: str, fragment: str) -> None:
    _write(tmp_path, text)
    with pytest.raises(ValidationError) as caught:
        config.load_config(tmp_path, environ={})
    first = str(caught.value.problems[0])
    assert first.startswith(f"{config.CONFIG_PATH}:{where}: ") and fragment in first


def test_environment_overrides_file_including_nested_and_lists(tmp_path: Path) -> None:
    _write(tmp_path, "concurrency: 2\nbudget: {day_usd: 5}\n")
    loaded = config.load_config(tmp_path, environ={
        "WAVEGIT_CONCURRENCY": "7", "WAVEGIT_BUDGET_WAVE_USD": "0.25", "WAVEGIT_HOOK_STRICT": "true",
        "WAVEGIT_REPORT_AUTHORS": "a, b,", "WAVEGIT_WORKER": "codex exec", "WAVEGIT_ITEM_ID": "ignored"})
    assert loaded.concurrency == 7 and loaded.worker == "codex exec"
    assert loaded.budget == config.Budget(wave_usd=0.25, day_usd=5.0)
    assert loaded.hook.strict is True and loaded.report_authors == ("a", "b")


@pytest.mark.parametrize(("var", "value"), [("WAVEGIT_CONCURRENCY", "many"), ("WAVEGIT_CONCURRENCY", "0"),
                                            ("WAVEGIT_TIMEOUT_S", "inf"), ("WAVEGIT_HOOK_STRICT", "maybe"),
                                            ("WAVEGIT_BUDGET_DAY_USD", "-1"), ("WAVEGIT_SANDBOX", "nope"),
                                            ("WAVEGIT_SANDBOX_MODE", "bwarp"),
                                            ("WAVEGIT_WORKER", "sh -c 'x")])
def test_bad_environment_value_names_the_variable(tmp_path: Path, var: str, value: str) -> None:
    with pytest.raises(UsageError, match=var):
        config.load_config(tmp_path, environ={var: value})


def test_a_worker_or_wave_test_that_cannot_be_split_into_words_is_a_located_problem(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        config.parse_config_text("worker: python 'agent.py\nwave_test: pytest \"x\n")
    assert [str(p) for p in caught.value.problems] == [
        ".wavegit/config.yaml:1:9: 'worker' cannot be split into words: No closing quotation",
        ".wavegit/config.yaml:2:12: 'wave_test' cannot be split into words: No closing quotation"]
    assert config.parse_config_text("wave_test: ''\n")["wave_test"] == ""


def test_initial_config_text_lists_every_key_with_its_default() -> None:
    text = config.initial_config_text()
    assert config.parse_config_text(text).keys() == set(config.Config._fields)
    for line in text.splitlines():
        assert line.startswith("#") or "  # " in line
    assert config.parse_config_text(text)["concurrency"] == config.Config().concurrency


def test_the_schema_is_the_config_record_every_key_declared_once() -> None:
    assert config.CONFIG_SCHEMA.names == config.Config._fields
    budget = config.CONFIG_SCHEMA.field("budget")
    assert budget is not None and budget.kind == "map" and budget.nested is not None
    assert budget.nested.names == config.Budget._fields
    kinds = {spec.name: spec.kind for spec in config.CONFIG_SCHEMA.fields}
    assert (kinds["worker"], kinds["concurrency"], kinds["timeout_s"], kinds["report_authors"]) == (
        "str", "int", "float", "str_list")
    assert all(spec.doc for spec in config.CONFIG_SCHEMA.fields)


def test_the_readme_config_table_is_the_declaration() -> None:
    expected = key_table(config.CONFIG_SCHEMA, config.Config()._asdict())
    assert expected in readme_tables(), f"README.md's configuration table should read:\n{expected}"


def test_warm_config_cache_does_not_import_yaml(tmp_path: Path) -> None:
    _write(tmp_path, "concurrency: 3\n")
    cache = tmp_path / "cache"
    assert config.load_config(tmp_path, cache, environ={}).concurrency == 3
    code = ("import sys; from pathlib import Path; from wavegit.model.config import load_config\n"
            f"root, cache = Path({str(tmp_path)!r}), Path({str(cache)!r})\n"
            "assert load_config(root, cache, environ={}).concurrency == 3\n"
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         check=True)
    assert out.stdout.strip() == "False"


def test_config_cache_follows_content_changes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _write(tmp_path, "concurrency: 3\n")
    assert config.load_config(tmp_path, cache, environ={}).concurrency == 3
    _write(tmp_path, "concurrency: 5\n")
    assert config.load_config(tmp_path, cache, environ={}).concurrency == 5


def test_a_wave_obeys_the_config_committed_on_the_base_branch_not_a_copy_on_the_tracker_branch(
        tmp_path: Path) -> None:
    first = "tracker_branch: wavegit-tracker\nworker: old\n"
    remote = make_remote_repo(tmp_path, {".wavegit/config.yaml": first})
    git(remote.clone, "push", "-q", "origin", "main:wavegit-tracker")
    # The change is merged to main later; the tracker branch keeps the config it was created with.
    (remote.clone / ".wavegit" / "config.yaml").write_text("tracker_branch: wavegit-tracker\nworker: new\n")
    git(remote.clone, "commit", "-qam", "use the new worker")
    git(remote.clone, "push", "-q", "origin", "main")
    obeyed = governing.load_governing(discover(remote.clone), environ={})
    assert obeyed.config.worker == "new"
    assert obeyed.source == "origin/main:.wavegit/config.yaml"


def test_a_base_branch_the_remote_lacks_is_refused_wherever_the_wave_would_read_it(tmp_path: Path) -> None:
    remote = make_remote_repo(tmp_path, {".wavegit/config.yaml": "worker: w\nbase_branch: main\n"})
    repo = discover(remote.clone)
    # Named by the variable, by the checkout's working file (WAVEGIT_CONFIG_SOURCE=checkout), or by the
    # config committed on the base branch when it differs from the checkout's HEAD.
    with pytest.raises(UsageError) as raised:
        governing.load_governing(repo, environ={"WAVEGIT_BASE_BRANCH": "trunk"})
    assert str(raised.value).startswith("environment variable WAVEGIT_BASE_BRANCH: base_branch 'trunk': no "
                                        "such branch on origin (it has main); ")
    assert str(raised.value).endswith(": set WAVEGIT_BASE_BRANCH to the branch your work lands on")
    _write(remote.clone, "worker: w\nbase_branch: mainn\n")
    with pytest.raises(UsageError) as raised:
        governing.load_governing(repo, environ={"WAVEGIT_CONFIG_SOURCE": "checkout"})
    assert str(raised.value).startswith(".wavegit/config.yaml:2:14: base_branch 'mainn': no such branch on "
                                        "origin (did you mean 'main'?); ")
    git(remote.clone, "commit", "-qam", "a typo, pushed")
    git(remote.clone, "push", "-q", "origin", "main")
    git(remote.clone, "checkout", "-q", "HEAD~1")  # a checkout from before it: main is there
    with pytest.raises(UsageError, match=r"^\.wavegit/config\.yaml:2:14: base_branch 'mainn'"):
        governing.load_governing(repo, environ={})
    git(remote.clone, "checkout", "-q", "main")  # the checkout with the typo: the same line, not defaults
    with pytest.raises(UsageError, match=r"^\.wavegit/config\.yaml:2:14: base_branch 'mainn'"):
        governing.load_governing(repo, environ={})


def test_worker_profiles_and_prices_are_records_named_by_their_keys(tmp_path: Path) -> None:
    _write(tmp_path, "worker: deep\nworkers:\n  deep: {preset: claude, model: opus, args: [--verbose]}\n"
                     "  lint: {command: ./lint.sh}\n"
                     "prices:\n  gpt-5: {input_per_mtok: 1.25, output_per_mtok: 10}\n")
    loaded = config.load_config(tmp_path, tmp_path / "cache", environ={})
    assert loaded.workers == (config.WorkerProfile("deep", "claude", "opus", ("--verbose",)),
                              config.WorkerProfile("lint", command="./lint.sh"))
    assert loaded.prices == (config.ModelPrice("gpt-5", 1.25, 10.0),)
    # The warm load (from the parse cache) gives the same records.
    assert config.load_config(tmp_path, tmp_path / "cache", environ={}) == loaded


def test_workers_must_be_a_mapping_of_names_to_mappings() -> None:
    with pytest.raises(ValidationError) as raised:
        config.parse_config_text("workers: [claude]\n")
    assert str(raised.value).startswith(".wavegit/config.yaml:1:10: 'workers' must be a mapping of names to "
                                        "mappings, got a list")
