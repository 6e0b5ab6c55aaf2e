// Command gosdk is the listsync adapter for the official Go SDK (github.com/modelcontextprotocol/go-sdk):
// LISTSYNC_ROLE selects the server or the client; MCP runs over the process's own stdin/stdout and the
// control protocol (docs/harness-protocol.md) over the harness's Unix socket.
package main

import "listsync.local/adapters/internal/control"

const sdkModule = "github.com/modelcontextprotocol/go-sdk"

func main() { control.Main(sdkModule, runServer, runClient) }
