#!/usr/bin/env bash
# Runs on this machine the shard, merge and gate commands of one of the CI examples, as its
# pipeline would, all shards one after the other:
#
#   examples/ci/run-local.sh [gitlab|k8s|github] [TARGET]
#
# gitlab (the default) and k8s run the commands of examples/ci/gitlab/.gitlab-ci.yml and
# examples/ci/k8s/*.yaml, copied here line for line (they are the same but for where the shard's
# number comes from); github runs the chaoskit action's campaign.sh with the inputs that the
# steps of examples/ci/github/chaoskit.yml give it, the artifacts being copies. ci_test.go fails
# when the examples and this script drift apart. TARGET replaces the examples' target:
# reference/act-then-save, a variant with a bug, fails the gate.
#
# Environment: BASELINE, a report.json to gate against (in CI, the default branch's; empty:
# none); REPORTS, an empty or absent directory to work in (default: a new temporary one);
# CHAOSKIT, a chaoskit binary (default: built from this checkout).
#
# Besides the examples' commands it runs the campaign unsharded and checks that the merged
# report is the same, bar the fields ending in _ms, "provenance" and the trailer (whose
# checksum covers the _ms fields): if not, it exits 4.
# Otherwise it exits with the gate's exit code: 0 held, 1 failed, 2 usage or input error (a
# baseline of another campaign, say), 3 undecided.
set -euo pipefail

# The campaign, as every example sets it.
TARGET=reference
FAULTS=kill,power
MODE=exhaustive
CASES=60
SEED=1
SHARDS=4
GATE=duplicates==0,lost_effects==0,state_mismatches==0

pipeline=${1:-gitlab}
case $pipeline in
gitlab | k8s | github) ;;
*)
	echo "usage: $0 [gitlab|k8s|github] [TARGET]" >&2
	exit 2
	;;
esac
if [ $# -ge 2 ]; then
	TARGET=$2
fi
BASELINE=${BASELINE:-}
if [ -n "$BASELINE" ]; then
	BASELINE=$(cd "$(dirname "$BASELINE")" && pwd)/$(basename "$BASELINE")
fi

root=$(cd "$(dirname "$0")/../.." && pwd)
REPORTS=${REPORTS:-$(mktemp -d)}
mkdir -p "$REPORTS"
REPORTS=$(cd "$REPORTS" && pwd)
if [ -n "$(ls -A "$REPORTS")" ]; then
	echo "run-local: $REPORTS is not empty: the shards of another run would be merged too" >&2
	exit 2
fi
mkdir "$REPORTS/.bin"
if [ -n "${CHAOSKIT:-}" ]; then
	ln -s "$(cd "$(dirname "$CHAOSKIT")" && pwd)/$(basename "$CHAOSKIT")" "$REPORTS/.bin/chaoskit"
else
	(cd "$root" && go build -o "$REPORTS/.bin/chaoskit" ./cmd/chaoskit)
fi
PATH=$REPORTS/.bin:$PATH
echo "run-local: $pipeline, target $TARGET, $SHARDS shards, in $REPORTS"

# github_step WORKSPACE INPUT_NAME=VALUE...: the action's campaign step, in a job's workspace.
github_step() {
	local dir=$REPORTS/github/$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && env GITHUB_OUTPUT="$dir/github-output" GITHUB_STEP_SUMMARY="$dir/step-summary.md" \
		"$@" bash "$root/.github/actions/chaoskit/campaign.sh")
}

rc=0
if [ "$pipeline" = github ]; then
	for SHARD in $(seq "$SHARDS"); do
		github_step "shard-$SHARD" \
			INPUT_TARGET="$TARGET" \
			INPUT_FAULTS="$FAULTS" \
			INPUT_MODE="$MODE" \
			INPUT_CASES="$CASES" \
			INPUT_SEED="$SEED" \
			INPUT_SHARD="$SHARD/$SHARDS"
		# upload-artifact, then download-artifact into the gate job's shards/
		mkdir -p "$REPORTS/github/gate/shards"
		cp -R "$REPORTS/github/shard-$SHARD/chaoskit-report" "$REPORTS/github/gate/shards/chaoskit-shard-$SHARD"
	done
	github_step gate \
		INPUT_MERGE="shards" \
		INPUT_GATE="$GATE" \
		INPUT_BASELINE="$BASELINE" ||
		rc=$?
	merged=$REPORTS/github/gate/chaoskit-report
else
	for i in $(seq "$SHARDS"); do
		if [ "$pipeline" = gitlab ]; then
			CI_NODE_INDEX=$i CI_NODE_TOTAL=$SHARDS
			SHARD=$CI_NODE_INDEX SHARDS=$CI_NODE_TOTAL
		else
			JOB_COMPLETION_INDEX=$((i - 1))
			SHARD=$((JOB_COMPLETION_INDEX + 1))
		fi
		chaoskit run --target "$TARGET" --faults "$FAULTS" --mode "$MODE" --cases "$CASES" --seed "$SEED" --shard "$SHARD/$SHARDS" --format json --out "$REPORTS/shard-$SHARD" || test -f "$REPORTS/shard-$SHARD/report.json"
	done
	chaoskit merge --out "$REPORTS/merged" "$REPORTS"/shard-* || test -f "$REPORTS/merged/report.json"
	set +e
	chaoskit gate ${BASELINE:+--baseline "$BASELINE"} --gate "$GATE" "$REPORTS/merged"
	rc=$?
	set -e
	merged=$REPORTS/merged
fi

if [ ! -f "$merged/report.json" ]; then
	echo "run-local: no merged report (exit $rc)" >&2
	exit "$rc"
fi
# The check: the same campaign on one runner.
chaoskit run --target "$TARGET" --faults "$FAULTS" --mode "$MODE" --cases "$CASES" --seed "$SEED" --format json --out "$REPORTS/unsharded" >/dev/null 2>&1 || test -f "$REPORTS/unsharded/report.json" # not in the examples
same() { # a report.json less what differs by design: the _ms fields, "provenance" and the trailer
	sed -e '/^  "provenance": {$/,/^  },$/d' -e '/_ms": /d' -e '/^  "trailer": /d' -e 's/,$//' "$1"
}
if ! diff <(same "$merged/report.json") <(same "$REPORTS/unsharded/report.json") >"$REPORTS/merged-vs-unsharded.diff"; then
	echo "run-local: the merged report differs from the unsharded run's: $REPORTS/merged-vs-unsharded.diff" >&2
	exit 4
fi
echo "run-local: the merged report is the unsharded run's, bar the _ms fields, provenance and trailer"
echo "run-local: $pipeline: the gate exited $rc; the merged report is in $merged"
exit "$rc"
