#!/usr/bin/env bash
# Regenerates the replay-equality goldens — the figures of every recorded timeline under docs/figures/
# (scenarios/figures/testdata/replay.golden.json), the scenarios' extra counters and relations on the
# same runs (scenarios/testdata/relations.golden.json) and the verdict of chapter 4's recorded sweep
# (scenarios/testdata/verdict.golden.json) — with the code of COMMIT, over the timelines of this
# checkout, and writes them into this checkout:
#
#   scripts/replay-golden.sh COMMIT
#
# Use it when a recorded timeline changed (a scenario re-recorded): the goldens must come from the
# figure code they guard against, not from the code under test. COMMIT is the commit the golden tests
# name (goldentest.Commit, scenarios/figures/goldentest). It checks COMMIT out in a temporary git worktree, copies this checkout's
# docs/figures/ over it, runs COMMIT's golden tests there with -update, and copies the goldens back
# (at COMMIT before the figures moved out of scenarios/, one golden held both the figures and the
# relations: it is copied to both places, each test reading its own fields). Then run the golden
# tests here: they must pass.
set -euo pipefail
commit=${1:?usage: scripts/replay-golden.sh COMMIT (the commit whose code writes the goldens)}
here=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$here" worktree add --detach "$tmp/wt" "$commit" >/dev/null
rm -rf "$tmp/wt/docs/figures"
cp -r "$here/docs/figures" "$tmp/wt/docs/figures"
cd "$tmp/wt"
pkgs=$(grep -rlE --include='*_test.go' 'func Test(ReplayGolden|RelationsGolden|VerdictGolden)\(' . | xargs -n1 dirname | sort -u)
# shellcheck disable=SC2086 # one argument per package
go test $pkgs -run 'TestReplayGolden|TestRelationsGolden|TestVerdictGolden' -count=1 -update
first() { for f in "$@"; do if [ -f "$f" ]; then echo "$f"; return; fi; done; echo "replay-golden: none of $* at $commit" >&2; exit 1; }
mkdir -p "$here/scenarios/figures/testdata" "$here/scenarios/testdata"
cp "$(first scenarios/figures/testdata/replay.golden.json scenarios/testdata/replay.golden.json)" "$here/scenarios/figures/testdata/replay.golden.json"
cp "$(first scenarios/testdata/relations.golden.json scenarios/testdata/replay.golden.json)" "$here/scenarios/testdata/relations.golden.json"
cp scenarios/testdata/verdict.golden.json "$here/scenarios/testdata/verdict.golden.json"
echo "replay-golden: wrote scenarios/figures/testdata/replay.golden.json, scenarios/testdata/relations.golden.json and verdict.golden.json with the code of $commit"
