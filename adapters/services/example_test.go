package services_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/provider"
	"github.com/chaoskit/chaoskit/adapters/services"
	"github.com/chaoskit/chaoskit/faults"
	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/sim"
)

// A Go target reaches the model over HTTP, as it would a provider, through the client of its
// process: each request is a model call of its Env, answered from the cassette, and a fault at
// that beat is the provider's own HTTP answer.
func ExampleWrap() {
	cassette, _ := provider.Parse([]byte(`{"interactions": [{"match": {"turn": 1}, "answer": {"text": "hello"}}]}`), "hello.json")
	target := services.Wrap(harness.Func{RunFunc: func(ctx context.Context, env *harness.Env) (any, error) {
		body := `{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}`
		resp, err := services.Client(env).Post(services.BaseURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return resp.Status, nil
		}
		return strings.Contains(string(b), `"content":"hello"`), nil
	}}, services.Config{Cassette: cassette})
	rn, err := sim.NewRunner(func() harness.Target { return target }, sim.Options{Name: "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rn.Run(nil).Result)
	fmt.Println(rn.Run(faults.Schedule{{Kind: faults.ModelRateLimit, Beat: 0}}).Result)
	// Output:
	// true
	// 429 Too Many Requests
}
