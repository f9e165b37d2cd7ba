// app.test.mjs tests the harness of app.mjs under chaoskit from Node's test runner: a test per
// fault schedule.
//
//	node --test                                        18 cases, each a test: kill@3, tool-timeout@4, ...
//	node --test --test-name-pattern '^kill@1$'         one case
//	BROKEN=1 node --test                               the --broken variant: duplicate orders
//
// It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest).
import { check } from '../../js/nodetest.mjs';

check('app.mjs survives crashes and tool faults', {
  exec: ['node', 'app.mjs', ...(process.env.BROKEN ? ['--broken'] : [])],
  tools: { create_po: 'idempotent-by-key,latency=1s' },
  state: ['node', 'app.mjs', '--dump-state'],
  faults: ['kill', 'tool'],
});
