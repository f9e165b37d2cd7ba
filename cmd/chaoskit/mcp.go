package main

import (
	"flag"
	"os"

	"github.com/chaoskit/chaoskit/adapters/mcp"
)

// runMCP serves the MCP stdio transport on standard input and output by relaying every
// message to the campaign's MCP server for the process that launched it ($CHAOSKIT_MCP_URL,
// from its environment or its nearest ancestor's): what an agent that launches its MCP servers
// as subprocesses names as its server's command.
func runMCP(c *cli, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	url := fs.String("url", "", "the MCP endpoint to relay to (default: $"+mcp.EnvURL+", which chaoskit gives every process of a target with --tool)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("mcp takes no arguments, only --url")
	}
	if *url == "" {
		if _, ok := mcp.LookupURL(); !ok {
			return usagef("mcp: $%s is not set here nor in a parent process: run it as an MCP server of a command that chaoskit runs with --tool, or give --url", mcp.EnvURL)
		}
	}
	return mcp.Relay(c.ctx, mcp.RelayOptions{URL: *url, In: os.Stdin, Out: c.stdout, Log: c.stderr})
}
