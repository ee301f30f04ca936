// Command memoryplugin is an example store plugin built with the SDK
// (pkg/plugin): it keeps secrets in memory, with versions and ownership
// markers, and serves them on a unix socket, or on TCP with mutual TLS,
// until SIGTERM or an interrupt.
//
//	memoryplugin -endpoint unix:///run/watchword/memory.sock
//	memoryplugin -endpoint tcp://0.0.0.0:7443 -tls-ca ca.crt -tls-cert tls.crt -tls-key tls.key
package main

import "github.com/watchword-dev/watchword/pkg/plugin"

func main() {
	plugin.Main(newMemory().store(), "unix:///run/watchword/memory.sock")
}
