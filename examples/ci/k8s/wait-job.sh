#!/usr/bin/env bash
# Waits for a Kubernetes Job to finish and exits as soon as it has: 0 when it completed, 1 when
# it failed (a gate that failed, a shard out of retries), 2 when TIMEOUT passed first or kubectl
# cannot read the Job. (kubectl wait --for=condition=complete waits out its whole timeout when
# the Job fails: it waits for one condition, and a failed Job never completes.)
#
#   examples/ci/k8s/wait-job.sh JOB [TIMEOUT]     TIMEOUT: seconds, or 30s, 15m, 2h (default 15m)
#
# It asks for the Job's conditions every POLL seconds (default 5).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 JOB [TIMEOUT]" >&2
	exit 2
fi
job=$1
timeout=${2:-15m}
case $timeout in
*h) seconds=$((${timeout%h} * 3600)) ;;
*m) seconds=$((${timeout%m} * 60)) ;;
*s) seconds=${timeout%s} ;;
*) seconds=$timeout ;;
esac
deadline=$((SECONDS + seconds))
while :; do
	# The types of the conditions that hold, e.g. "SuccessCriteriaMet Complete ".
	if ! held=$(kubectl get "job/$job" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}'); then
		echo "wait-job: cannot read job/$job" >&2
		exit 2
	fi
	case " $held" in
	*" Complete "*)
		echo "wait-job: job/$job completed"
		exit 0
		;;
	*" Failed "*)
		echo "wait-job: job/$job failed" >&2
		exit 1
		;;
	esac
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "wait-job: job/$job has not finished after $timeout" >&2
		exit 2
	fi
	sleep "${POLL:-5}"
done
