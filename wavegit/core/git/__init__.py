"""The git layer: every git operation wavegit uses, by name, with typed ids; the only face of git.

Callers import this package and nothing under it (its modules are private): ``git.fetch``,
``git.update_ref``, ``git.delete_refs``, ``git.GitError``. Each operation takes the directory git runs in,
raises :class:`GitError` (command, exit code, stderr) when git fails -- except where its docstring says
what a failure returns instead -- and takes and returns typed values: ``CommitSha``, ``BlobSha``,
``TreeSha``, ``Branch`` and ``WaveId`` are ``NewType``s of ``str`` (free at run time). Operations whose
failures callers tell apart by git's message (fetch, push, update-ref) run git in the C locale.

Inside: :mod:`._runner` runs git (hardened, with a clean environment) and is the only module that may;
:mod:`._ops` holds the repository, history, refs, remotes, blobs and trees; :mod:`._objects` attempt
trees and objects in bulk; :mod:`._merges` what commits changed and whether a change is in a branch;
:mod:`._worktrees` the user's checkout and linked worktrees. Only these modules and ``demo.walkthrough``
build git command lines (``tests/test_architecture.py`` checks it).

Both hot paths import this package: records are NamedTuples and annotations are not postponed (see
:class:`GitResult`); it imports nothing but :mod:`wavegit.core.errors` and the standard library.
"""

from wavegit.core.git._merges import (
    Change,
    CommitChanges,
    changes_of_commits,
    last_change,
    merge_tree,
    own_changes,
    patch_ids,
)
from wavegit.core.git._objects import (
    absolute_git_dir,
    cat_file_batch,
    check_ignore,
    check_out_files,
    check_out_unlogged,
    fast_import,
    git_path,
    idents,
    init_repository,
    ls_tree_recursive,
    missing_objects,
    pack_reachable,
    tags_merged,
)
from wavegit.core.git._ops import (
    STALE_TRACKING_LOCK_S,
    BlobSha,
    Branch,
    CommitSha,
    Location,
    PushOutcome,
    TreeEntry,
    TreeSha,
    WaveId,
    blob_at,
    blob_id,
    build_tree,
    changed_paths,
    commit_message,
    commit_of,
    commit_tree,
    committer_ident,
    config_value,
    create_bundle,
    delete_refs,
    fetch,
    first_parent,
    for_each_ref,
    hash_file,
    is_ancestor,
    is_object_id,
    is_shallow,
    is_valid_ref_name,
    locate,
    log,
    log_changes,
    ls_tree,
    missing_remote_ref,
    push,
    push_with_lease,
    read_blob,
    read_blob_at,
    read_commit_and_blob,
    ref_messages,
    remote_urls,
    remotes,
    resolve_commit,
    rev_list,
    set_upstream,
    tree_of,
    update_ref,
)
from wavegit.core.git._runner import (
    RULESET_REFUSAL,
    GitError,
    GitResult,
    RuleViolation,
    clean_env,
    lines,
    no_hooks_dir,
    out,
    run,
    set_remote_auth,
    without_repo_vars,
)
from wavegit.core.git._worktrees import (
    Worktree,
    fast_forward,
    is_clean,
    refresh_files,
    staged_entries,
    worktrees,
)

__all__ = [
    "RULESET_REFUSAL", "STALE_TRACKING_LOCK_S", "BlobSha", "Branch", "Change", "CommitChanges", "CommitSha",
    "GitError", "GitResult", "Location", "PushOutcome", "RuleViolation", "TreeEntry", "TreeSha", "WaveId",
    "Worktree", "absolute_git_dir", "blob_at", "blob_id", "build_tree", "cat_file_batch",
    "changed_paths",
    "changes_of_commits", "check_ignore", "check_out_files", "check_out_unlogged", "clean_env",
    "commit_message", "commit_of",
    "commit_tree", "committer_ident", "config_value", "create_bundle",
    "delete_refs", "fast_forward", "fast_import", "fetch", "first_parent",
    "for_each_ref", "git_path", "hash_file", "idents", "init_repository",
    "is_ancestor", "is_clean", "is_object_id", "is_shallow", "is_valid_ref_name", "last_change", "lines",
    "locate", "log",
    "log_changes", "ls_tree", "ls_tree_recursive", "merge_tree", "missing_objects", "missing_remote_ref",
    "no_hooks_dir", "out", "own_changes", "pack_reachable", "patch_ids", "push",
    "push_with_lease", "read_blob", "read_blob_at", "read_commit_and_blob", "ref_messages", "refresh_files",
    "remote_urls",
    "remotes", "resolve_commit", "rev_list", "run", "set_remote_auth", "set_upstream", "staged_entries",
    "tags_merged", "tree_of", "update_ref", "without_repo_vars", "worktrees",
]
