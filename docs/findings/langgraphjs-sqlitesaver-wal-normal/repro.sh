#!/bin/sh
# SqliteSaver runs WAL at synchronous=NORMAL: after the fsyncs of the switch to WAL and of the
# new WAL's header, no put() is fsynced. Then the same with synchronous=FULL set after setup():
# an fsync of the WAL before each put resolves.
#
# Needs node, npm (unless run from a chaoskit checkout after `npm ci` in adapters/langgraph,
# whose node_modules it uses) and strace.
set -e
here=$(cd "$(dirname "$0")" && pwd)
modules=$here/../../../adapters/langgraph/node_modules
dir=$(mktemp -d)
cp "$here/repro.mjs" "$dir/"
cd "$dir"
if [ -d "$modules/@langchain/langgraph-checkpoint-sqlite" ]; then
  ln -s "$modules" node_modules
else
  npm install --silent --no-audit --no-fund @langchain/langgraph-checkpoint-sqlite@1.0.4 better-sqlite3@12.11.1
fi
node -e "const D = require('better-sqlite3'); console.log('better-sqlite3', require('better-sqlite3/package.json').version, 'SQLite', new D(':memory:').prepare('select sqlite_version() v').get().v)"
for mode in NORMAL FULL; do
  rm -f cp.db cp.db-wal cp.db-shm cp.db-journal
  echo "== node repro.mjs $mode"
  # repro.mjs ends with a SIGKILL of itself, so strace exits non-zero.
  strace -f -y -e trace=fsync,fdatasync,write -o trace node repro.mjs "$mode" || true
  grep -E 'fsync|fdatasync|put [0-9] resolved' trace | sed "s/^[0-9]* *//; s/ *= [0-9]*$//; s|$PWD/||; s|<$PWD>|<.>|; s/<pipe:[^>]*>//"
done
