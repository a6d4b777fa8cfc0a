#!/usr/bin/env bash
# The checkout stand-in: a fresh clone of $WAVEGIT_TEST_ORIGIN, as actions/checkout makes one from GitHub.
set -euo pipefail
: "${WAVEGIT_TEST_ORIGIN:?the checkout stand-in needs WAVEGIT_TEST_ORIGIN (the bare origin)}"
cd "$GITHUB_WORKSPACE"
if [[ "$TARGET" == "." || -z "$TARGET" ]]; then
  # A runner's workspace starts empty; act copied the project folder into it.
  find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  TARGET=.
else
  rm -rf "$TARGET"
fi
ref="${REF:-$GITHUB_SHA}"
ref="${ref#refs/heads/}"
git init -q "$TARGET"
cd "$TARGET"
git remote add origin "file://$WAVEGIT_TEST_ORIGIN"
depth=()
if [[ "$DEPTH" != 0 ]]; then
  depth=(--depth "$DEPTH")
fi
if git ls-remote --exit-code --heads origin "$ref" >/dev/null 2>&1; then
  if [[ "$DEPTH" == 0 ]]; then
    git fetch -q --prune origin '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
  else
    git fetch -q --no-tags "${depth[@]}" origin "+refs/heads/$ref:refs/remotes/origin/$ref"
  fi
  git checkout -q --force -B "$ref" "refs/remotes/origin/$ref"
else
  # A commit (a pull request's head, a merge group's): fetched by its id, checked out detached.
  if [[ "$DEPTH" == 0 ]]; then
    git fetch -q --prune origin '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
  fi
  git fetch -q --no-tags "${depth[@]}" origin "$ref"
  git checkout -q --force --detach "$ref"
fi
if [[ "$PERSIST" != false ]]; then
  basic="$(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)"
  git config --local "http.$GITHUB_SERVER_URL/.extraheader" "AUTHORIZATION: basic $basic"
fi
