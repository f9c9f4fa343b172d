#!/usr/bin/env bash
# Regenerates the replay-equality goldens (the figures of every recorded timeline under docs/figures/,
# and of chapter 4's recorded sweep) with the figure code of COMMIT, over the timelines of this
# checkout, and writes them into this checkout:
#
#   scripts/replay-golden.sh COMMIT
#
# Use it when a recorded timeline changed (a scenario re-recorded): the goldens must come from the
# figure code they guard against, not from the code under test. COMMIT is the commit whose figure code
# the goldens state (the one that wrote them: git log -1 --format=%h -- <the golden files>). It checks
# COMMIT out in a temporary git worktree, copies this checkout's docs/figures/ over it, runs the golden
# test there with -update, and copies the goldens back. Then run the golden test here: it must pass.
set -euo pipefail
commit=${1:?usage: scripts/replay-golden.sh COMMIT (the commit whose figure code writes the goldens)}
here=$(git rev-parse --show-toplevel)
# Where this checkout keeps the goldens (the golden test's package).
dest=$here/scenarios/testdata
tmp=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$here" worktree add --detach "$tmp/wt" "$commit" >/dev/null
rm -rf "$tmp/wt/docs/figures"
cp -r "$here/docs/figures" "$tmp/wt/docs/figures"
# The golden test of COMMIT: wherever its package is (scenarios/ at the golden's first commit).
pkg=$(cd "$tmp/wt" && grep -rl --include='*_test.go' 'func TestReplayGolden' . | head -1 | xargs dirname)
(cd "$tmp/wt" && go test "$pkg" -run 'TestReplayGolden|TestVerdictGolden' -count=1 -update)
mkdir -p "$dest"
cp "$tmp/wt/$pkg/testdata/replay.golden.json" "$tmp/wt/$pkg/testdata/verdict.golden.json" "$dest/"
echo "replay-golden: wrote $dest/replay.golden.json and verdict.golden.json with the figure code of $commit"
