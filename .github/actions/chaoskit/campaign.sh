#!/usr/bin/env bash
# The chaoskit action's main step. action.yml runs it with the action's inputs as INPUT_*
# variables, and examples/ci/run-local.sh runs it the same way on a workstation.
#
# It runs a campaign (or shard INPUT_SHARD of it) into INPUT_OUT, or merges the shard reports
# found in INPUT_MERGE's subdirectories; then, given INPUT_GATE or INPUT_BASELINE, runs
# chaoskit gate on the report. It appends summary.md and the gate's lines to
# $GITHUB_STEP_SUMMARY, writes exit-code and report-dir to $GITHUB_OUTPUT, and exits with
# chaoskit's exit code: the gate's when there is a gate, 0 for a shard without one (its
# verdicts are the merge's), the run's or the merge's otherwise.
set -uo pipefail

out=${INPUT_OUT:-chaoskit-report}

finish() {
	local rc=$1
	case $rc in
	0) ;;
	1) echo "::error title=chaoskit::the gate failed, or a case did (exit 1)" ;;
	2) echo "::error title=chaoskit::a usage or input error (exit 2): the line above names it" ;;
	3) echo "::error title=chaoskit::a case could not be decided, or a fault kind asked for had no case (exit 3)" ;;
	130 | 143) echo "::error title=chaoskit::stopped by a signal (exit $rc): the journal is kept; chaoskit run --resume continues it" ;;
	*) echo "::error title=chaoskit::chaoskit failed (exit $rc)" ;;
	esac
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf 'exit-code=%s\nreport-dir=%s\n' "$rc" "$out" >>"$GITHUB_OUTPUT"
	fi
	exit "$rc"
}

usage() { # a mistake in the action's inputs, told as chaoskit tells one
	echo "chaoskit action: $*" >&2
	finish 2
}

trim() {
	local s=$1
	s=${s#"${s%%[![:space:]]*}"}
	printf '%s' "${s%"${s##*[![:space:]]}"}"
}

args=()
# one FLAG VALUE if the value is not empty
one() { [ -z "$2" ] || args+=("$1" "$2"); }
# one FLAG LINE for each line of the value that is not blank
each() {
	local line
	while IFS= read -r line || [ -n "$line" ]; do
		line=$(trim "$line")
		[ -z "$line" ] || args+=("$1" "$line")
	done <<<"$2"
}

if [ -n "${INPUT_BASELINE:-}" ] && [ ! -e "$INPUT_BASELINE" ]; then
	usage "baseline $INPUT_BASELINE does not exist (leave the input empty when there is no baseline yet)"
fi

extra=()
while IFS= read -r line || [ -n "$line" ]; do
	line=$(trim "$line")
	[ -z "$line" ] || extra+=("$line")
done <<<"${INPUT_ARGS:-}"

if [ -n "${INPUT_MERGE:-}" ]; then
	for input in TARGET EXEC NAME TOOLS STATE DISK DIR ENV IGNORE FAULTS MODE CASES SEED SHARD; do
		var=INPUT_$input
		if [ -n "${!var:-}" ]; then
			usage "merge takes the campaign from its shards: give ${input,,} to the shard jobs, not to the merge"
		fi
	done
	shopt -s nullglob
	shards=("$INPUT_MERGE"/*/report.json)
	if [ ${#shards[@]} -eq 0 ]; then
		usage "merge: no shard report (DIR/report.json) in the subdirectories of $INPUT_MERGE"
	fi
	cmd=(chaoskit merge --out "$out" "${extra[@]}" "${shards[@]}")
else
	one --target "${INPUT_TARGET:-}"
	one --exec "${INPUT_EXEC:-}"
	one --name "${INPUT_NAME:-}"
	each --tool "${INPUT_TOOLS:-}"
	one --state "${INPUT_STATE:-}"
	one --disk "${INPUT_DISK:-}"
	one --dir "${INPUT_DIR:-}"
	each --env "${INPUT_ENV:-}"
	each --ignore "${INPUT_IGNORE:-}"
	one --faults "${INPUT_FAULTS:-}"
	one --mode "${INPUT_MODE:-}"
	one --cases "${INPUT_CASES:-}"
	one --seed "${INPUT_SEED:-}"
	one --shard "${INPUT_SHARD:-}"
	cmd=(chaoskit run "${args[@]}" "${extra[@]}" --out "$out")
fi

printf '%q ' "${cmd[@]}"
echo
"${cmd[@]}"
rc=$?
if [ ! -f "$out/report.json" ]; then
	echo "chaoskit action: chaoskit wrote no $out/report.json (exit $rc)" >&2
	[ "$rc" -ne 0 ] || rc=2
	finish "$rc"
fi

verdict=
if [ -n "${INPUT_GATE:-}${INPUT_BASELINE:-}" ]; then
	gate=(chaoskit gate)
	if [ -n "${INPUT_BASELINE:-}" ]; then
		gate+=(--baseline "$INPUT_BASELINE")
	fi
	if [ -n "${INPUT_TOLERANCE:-}" ]; then
		gate+=(--tolerance "$INPUT_TOLERANCE")
	fi
	if [ -n "${INPUT_GATE:-}" ]; then
		gate+=(--gate "$INPUT_GATE")
	fi
	gate+=("$out")
	printf '%q ' "${gate[@]}"
	echo
	verdict=$(mktemp)
	"${gate[@]}" 2>&1 | tee "$verdict"
	rc=${PIPESTATUS[0]}
elif [ -n "${INPUT_SHARD:-}" ]; then
	rc=0 # the shard's verdicts are the merge's
fi

if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	{
		if [ -f "$out/summary.md" ]; then
			cat "$out/summary.md"
		fi
		if [ -n "$verdict" ]; then
			printf '\n## Gate (exit %s)\n\n```\n' "$rc"
			cat "$verdict"
			printf '```\n'
		fi
	} >>"$GITHUB_STEP_SUMMARY"
fi
[ -z "$verdict" ] || rm -f "$verdict"
finish "$rc"
