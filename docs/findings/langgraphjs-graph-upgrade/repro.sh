#!/bin/sh
# A thread checkpointed by one graph (v1), resumed by another (v2) on the same SqliteSaver
# database, as after a deploy: which nodes v2 runs. v1 dies at the start of refund (the
# checkpoint after lookup saved), right after lookup's writes are saved (before the checkpoint
# of its step), or at the start of notify; then each v2 resumes a copy of that database (and its
# WAL) with invoke(null).
#
# Needs node and npm (unless run from a chaoskit checkout after `npm ci` in
# adapters/process/examples/agents, whose node_modules it uses).
set -e
here=$(cd "$(dirname "$0")" && pwd)
modules=$here/../../../adapters/process/examples/agents/node_modules
dir=$(mktemp -d)
cp "$here/repro.mjs" "$dir/"
cd "$dir"
if [ -d "$modules/@langchain/langgraph-checkpoint-sqlite" ]; then
  ln -s "$modules" node_modules
else
  npm install --silent --no-audit --no-fund @langchain/langgraph@1.7.3 @langchain/core@1.4.0 \
    @langchain/langgraph-checkpoint-sqlite@1.0.4 better-sqlite3@12.11.1
fi
node -e "console.log('@langchain/langgraph', require('@langchain/langgraph/package.json').version)"
for stop in at:refund after:lookup at:notify; do
  rm -f v1.db*
  echo "== v1, dying $stop"
  node repro.mjs v1 "$stop" v1.db || true
  for v2 in v1 insert migrate append rename; do
    rm -f v2.db*
    for f in v1.db*; do cp "$f" "v2${f#v1}"; done
    echo "-- then $v2"
    node repro.mjs "$v2" none v2.db
  done
done
