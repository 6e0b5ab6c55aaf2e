package control

import (
	"errors"
	"os"
)

// Runner starts one role of an adapter on the MCP stdio channel; version is the SDK's module version.
type Runner func(ctl *Control, env *Env, version string) error

// Main is an adapter's whole main: read the environment, connect to the control socket, run the
// role LISTSYNC_ROLE names with the SDK module's version, then serve control commands until shutdown.
// Every failure is reported on the control socket (or stderr before it is connected) and exits.
func Main(sdkModule string, server, client Runner) {
	env, envErr := ReadEnv()
	ctl, err := Connect(os.Getenv("LISTSYNC_CONTROL"))
	if err != nil {
		Logf("cannot connect to the control socket: %v", err)
		os.Exit(2)
	}
	if envErr != nil {
		Fail(ctl, envErr)
	}
	version := ModuleVersion(sdkModule)
	switch env.Role {
	case "server":
		err = server(ctl, env, version)
	case "client":
		err = client(ctl, env, version)
	default:
		err = errors.New("LISTSYNC_ROLE must be server or client, got '" + env.Role + "'")
	}
	if err != nil {
		Fail(ctl, err)
	}
	ctl.Serve()
}
