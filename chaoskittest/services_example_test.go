package chaoskittest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/campaign"
	"github.com/chaoskit/chaoskit/chaoskittest"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
)

// payer asks its model whether to pay, over the OpenAI API as an SDK would, then charges the
// payments API with an idempotency key; any error ends the process, which is run again.
func payer(ctx context.Context, env *harness.Env) (any, error) {
	c := services.Client(env) // in a real agent: the SDK's HTTP client option
	post := func(path, key, body string) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", services.BaseURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return nil
	}
	if err := post("/v1/chat/completions", "", `{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "pay acme?"}]}`); err != nil {
		return nil, err
	}
	return "paid", post("/v1/charges", "charge-acme", `{"usd": 1200}`)
}

// A Go target gets the services a command gets from chaoskit run (--cassette, --http, --tool)
// by wrapping it with services.Wrap: Check then explores it as any other, each request a beat.
func ExampleCheck_services() {
	cassette, _ := provider.Parse([]byte(`{"interactions": [{"match": {"turn": 1}, "answer": {"text": "yes"}}]}`), "pay.json")
	charges, _ := rest.ParseRoute("POST /v1/charges=idempotent-by-header:Idempotency-Key")
	cfg := services.Config{Cassette: cassette, Routes: []rest.Route{charges}}
	t := printingTB{name: "TestPayer"} // in a real test, the *testing.T
	chaoskittest.Check(t, func() harness.Target {
		return services.Wrap(harness.Func{RunFunc: payer}, cfg)
	}, campaign.Options{Faults: []faults.Kind{faults.Kill, faults.ModelError, faults.ToolAmbiguous}})
	// Output:
	// log: chaoskit: TestPayer: 5 cases over 3 golden beats, 0 did not pass
}
