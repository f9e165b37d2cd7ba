#!/bin/sh
# DBOS's SQLite system database at WAL + synchronous=NORMAL: after the five fsyncs of opening
# and migrating the database, no recorded step is fsynced. Then ten runs with the user's own
# _pragma=synchronous(FULL) in the DatabaseURL, which DBOS overrides to NORMAL on one of the
# pool's connections: whether a step is fsynced depends on which connection records it.
#
# Needs go (it fetches DBOS v1.8.0 as go.mod and go.sum pin it) and strace.
set -e
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
(cd "$here" && go build -o "$dir/repro" .)
cd "$dir"
run() { # run URL: the program under strace, on a fresh db/
  rm -rf db && mkdir db
  # The program ends with a SIGKILL of itself, so strace exits non-zero. DBOS logs to stdout.
  strace -f -y -e trace=fsync,fdatasync,write -o trace ./repro "$1" >/dev/null 2>&1 || true
}
echo "== DatabaseURL sqlite:db/sys.db (DBOS's own settings)"
run 'sqlite:db/sys.db'
grep -E 'fsync|fdatasync|recorded|workflow done' trace | sed "s/^[0-9]* *//; s/ *= [0-9]*$//; s|$PWD/||; s/<pipe:[^>]*>//; s|</dev/null>||"
echo "the WAL at the kill: $(wc -c < db/sys.db-wal) bytes"
echo "== DatabaseURL 'sqlite:db/sys.db?_pragma=synchronous(FULL)', ten runs"
for i in 1 2 3 4 5 6 7 8 9 10; do
  run 'sqlite:db/sys.db?_pragma=synchronous(FULL)'
  echo "run $i: $(awk '/step 0 recorded/ {on = 1} on && /fsync|fdatasync/ {n++} END {print n + 0}' trace) fsyncs from the first step recorded to the kill"
done
