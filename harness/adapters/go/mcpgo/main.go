// Command mcpgo is the listsync adapter for github.com/mark3labs/mcp-go:
// LISTSYNC_ROLE selects the server or the client; MCP runs over the process's own stdin/stdout and the
// control protocol (docs/harness-protocol.md) over the harness's Unix socket.
package main

import (
	"errors"
	"os"

	"listsync.local/adapters/internal/control"
)

const sdkModule = "github.com/mark3labs/mcp-go"

func main() {
	env, envErr := control.ReadEnv()
	path := os.Getenv("LISTSYNC_CONTROL")
	ctl, err := control.Connect(path)
	if err != nil {
		control.Logf("cannot connect to the control socket: %v", err)
		os.Exit(2)
	}
	if envErr != nil {
		control.Fail(ctl, envErr)
	}
	version := control.ModuleVersion(sdkModule)
	switch env.Role {
	case "server":
		err = runServer(ctl, env, version)
	case "client":
		err = runClient(ctl, env, version)
	default:
		err = errors.New("LISTSYNC_ROLE must be server or client, got '" + env.Role + "'")
	}
	if err != nil {
		control.Fail(ctl, err)
	}
	ctl.Serve()
}
