// agents.test.mjs tests the OpenAI Agents SDK purchasing agent (openai-agent.mjs) under chaoskit
// from Node's test runner, a test per case, with the node:test helper (../../js/nodetest.mjs):
// the agent as it ships, its model answered from the cassette, its REST and MCP tools served by
// chaoskit, only environment variables pointing it at them.
//
//	node --test agents.test.mjs                                      a kill at every beat
//	node --test --test-name-pattern '^kill@2$' agents.test.mjs       one case
//	NO_KEY=1 node --test agents.test.mjs                             the --no-key twin: charges twice
//
// Today kill@4 and kill@5 fail bounded-work-lost: the restart resumes from the last approval
// pause, which the SDK's RunState allows, and makes again the approved call and the model turn
// since (docs/findings/sdk-resume.md).
//
// It needs the chaoskit command on PATH (go install github.com/chaoskit/chaoskit/cmd/chaoskit@latest)
// and the npm packages of this directory (npm ci).
import { check } from '../../js/nodetest.mjs';

check('the purchasing agent survives kills', {
  exec: ['node', 'openai-agent.mjs', ...(process.env.NO_KEY ? ['--no-key'] : [])],
  cassette: 'cassettes/openai-agent.json',
  http: {
    'POST /v1/purchase_orders': 'idempotent-by-header:Idempotency-Key',
    'POST /v1/charges': 'idempotent-by-header:Idempotency-Key',
  },
  tools: { notify_finance: 'idempotent-by-meta:idempotency_key' },
  env: { PAYMENTS_API_URL: '${CHAOSKIT_HTTP_URL}' },
  state: ['node', 'openai-agent.mjs', '--dump-state'],
  faults: ['kill'],
});
