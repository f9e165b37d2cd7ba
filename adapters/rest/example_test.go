package rest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
)

// printer is a Tools that prints each call and applies it.
type printer struct{}

func (printer) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	fmt.Printf("process %s calls %s key=%s args=%s\n", rest.Token(ctx), c.Tool, c.Key, c.Args)
	return harness.Reply{ID: c.Tool + "-1"}, nil
}

// A payment API's charges, idempotent by the Idempotency-Key header, as a function tool's REST
// client calls them at its base URL: the key is not part of the effect's arguments.
func ExampleNew() {
	charges, err := rest.ParseRoute("POST /v1/charges=idempotent-by-header:Idempotency-Key,name=charges")
	if err != nil {
		fmt.Println(err)
		return
	}
	svc, err := rest.New(rest.Options{Routes: []rest.Route{charges}, World: printer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(svc)
	defer srv.Close()

	base := srv.URL + "/t/proc-1" // the process's base URL
	req, _ := http.NewRequest("POST", base+"/v1/charges", strings.NewReader(`{"amount":100,"currency":"usd"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// process proc-1 calls charges key=order-7 args={"body":{"amount":100,"currency":"usd"}}
	// 200 {"amount":100,"currency":"usd","id":"charges-1"}
}

func ExampleParseRoute() {
	r, err := rest.ParseRoute("POST /v1/orders=idempotent-by-body:$.idempotency_key,status=201")
	fmt.Printf("%s %s %v key in body at %s, tool %q, status %d, %v\n", r.Method, r.Path, r.Contract, r.Key.Body, r.ToolName(), r.Status, err)
	fmt.Println(r)

	_, err = rest.ParseRoute("POST /v1/orders=idempotent-by-key")
	fmt.Println(err)
	// Output:
	// POST /v1/orders idempotent-by-key key in body at $.idempotency_key, tool "POST /v1/orders", status 201, <nil>
	// POST /v1/orders=idempotent-by-body:$.idempotency_key,status=201
	// route "POST /v1/orders=idempotent-by-key": contract "idempotent-by-key": say where the key is: read-only, not-idempotent, idempotent-by-header:NAME, idempotent-by-body:$.PATH, idempotent-by-arg:$.PATH or idempotent-by-meta:NAME
}

func ExampleParseContract() {
	c, k, err := rest.ParseContract(`idempotent-by-arg:$.order["idempotency key"]`)
	fmt.Println(c, k.Arg, err)
	fmt.Println(rest.FormatContract(c, k))
	// Output:
	// idempotent-by-key $.order["idempotency key"] <nil>
	// idempotent-by-arg:$.order["idempotency key"]
}

// SplitKey takes a key out of a decoded body, and Encode identifies what is left.
func ExampleSplitKey() {
	doc, _ := rest.Decode([]byte(`{"qty":2,"order":{"sku":"A1","key":"run-7:3"}}`))
	args, key, err := rest.SplitKey(doc, "$.order.key")
	fmt.Println(key, string(rest.Encode(args)), err)
	// Output:
	// run-7:3 {"order":{"sku":"A1"},"qty":2} <nil>
}

// One WithToken in front of several handlers: the token leaves the path before the mux sees it.
func ExampleWithToken() {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s from %s", r.URL.Path, rest.Token(r.Context()))
	})
	srv := httptest.NewServer(rest.WithToken(mux))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/t/proc-3/mcp")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	// Output:
	// /mcp from proc-3
}
