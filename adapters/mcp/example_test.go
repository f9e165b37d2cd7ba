package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/chaoskit/chaoskit/adapters/mcp"
	"github.com/chaoskit/chaoskit/adapters/rest"
	"github.com/chaoskit/chaoskit/harness"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// printer is a rest.Tools that prints each call and applies it.
type printer struct{}

func (printer) Call(ctx context.Context, c harness.Call) (harness.Reply, error) {
	fmt.Printf("process %s calls %s key=%s args=%s\n", rest.Token(ctx), c.Tool, c.Key, c.Args)
	return harness.Reply{ID: c.Tool + "-1"}, nil
}

// An MCP client calls a declared tool over streamable HTTP: the idempotency key, an argument,
// is the call's Key and no part of its Args.
func ExampleNew() {
	createPO, err := mcp.ParseTool("create_po=idempotent-by-arg:$.idempotency_key")
	if err != nil {
		fmt.Println(err)
		return
	}
	createPO.Description = "Create a purchase order."
	s, err := mcp.New(mcp.Options{Tools: []mcp.Tool{createPO}, World: printer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	ctx := context.Background()
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL + "/t/proc-1/mcp"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range list.Tools {
		fmt.Printf("tool %s: %s\n", t.Name, t.Description)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{
		Name:      "create_po",
		Arguments: map[string]any{"vendor": "acme", "qty": 3, "idempotency_key": "run-1:step-2"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// tool create_po: Create a purchase order.
	// process proc-1 calls create_po key=run-1:step-2 args={"qty":3,"vendor":"acme"}
	// {"id":"create_po-1"}
}

func ExampleParseTool() {
	t, err := mcp.ParseTool("send_email=idempotent-by-meta:idempotency_key")
	fmt.Println(t.Name, t.Contract, "key in _meta."+t.Key.Meta, err)
	fmt.Println(t)

	_, err = mcp.ParseTool("send_email=idempotent-by-header:Idempotency-Key")
	fmt.Println(err)
	// Output:
	// send_email idempotent-by-key key in _meta.idempotency_key <nil>
	// send_email=idempotent-by-meta:idempotency_key
	// tool "send_email=idempotent-by-header:Idempotency-Key": Key: idempotent-by-header is not for this front end (want idempotent-by-arg or idempotent-by-meta)
}

// The relay an agent launches as its MCP server: JSON-RPC lines on its standard input and
// output, each relayed to the campaign's streamable HTTP endpoint (here given as URL; chaoskit
// mcp takes it from $CHAOSKIT_MCP_URL).
func ExampleRelay() {
	notify, _ := mcp.ParseTool("notify=not-idempotent")
	s, err := mcp.New(mcp.Options{Tools: []mcp.Tool{notify}, World: printer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notify","arguments":{"text":"hi"}}}` + "\n")
	var out bytes.Buffer
	err = mcp.Relay(context.Background(), mcp.RelayOptions{URL: srv.URL + "/t/proc-2/mcp", In: in, Out: &out})
	fmt.Print(out.String(), err, "\n")
	// Output:
	// process proc-2 calls notify key= args={"text":"hi"}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"id\":\"notify-1\"}"}],"structuredContent":{"id":"notify-1"}}}
	// <nil>
}
