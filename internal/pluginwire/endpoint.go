package pluginwire

import (
	"fmt"
	"net"
	"strings"

	"github.com/watchword-dev/watchword/internal/engine"
)

// TCPScheme starts the endpoint of a plugin that listens on TCP, which
// both ends protect with mutual TLS.
const TCPScheme = "tcp://"

// Endpoint is a parsed plugin endpoint.
type Endpoint struct {
	// Network is "unix" or "tcp".
	Network string
	// Address is the socket's path, or host:port.
	Address string
}

// TCP tells whether the endpoint is a TCP address (and needs TLS).
func (e Endpoint) TCP() bool { return e.Network == "tcp" }

// Host is the host of a TCP endpoint: the name a server certificate is
// checked against unless a store overrides it.
func (e Endpoint) Host() string {
	host, _, err := net.SplitHostPort(e.Address)
	if err != nil {
		return e.Address
	}
	return host
}

// Target is the endpoint as a gRPC client target.
func (e Endpoint) Target() string {
	if e.TCP() {
		return "dns:///" + e.Address
	}
	return UnixScheme + e.Address
}

// String is the endpoint as a store spells it.
func (e Endpoint) String() string {
	if e.TCP() {
		return TCPScheme + e.Address
	}
	return UnixScheme + e.Address
}

// ParseEndpoint parses unix:///absolute/path or tcp://host:port; an
// endpoint of another form is an error wrapping engine.ErrInvalidConfig
// that says what an endpoint looks like.
func ParseEndpoint(endpoint string) (Endpoint, error) {
	if rest, ok := strings.CutPrefix(endpoint, TCPScheme); ok {
		host, port, err := net.SplitHostPort(rest)
		if err != nil || host == "" || port == "" || strings.ContainsAny(rest, "/?#@") {
			return Endpoint{}, fmt.Errorf("endpoint %q is not tcp://host:port, such as tcp://plugin.example.svc:7443: %w", endpoint, engine.ErrInvalidConfig)
		}
		return Endpoint{Network: "tcp", Address: rest}, nil
	}
	path, err := SocketPath(endpoint)
	if err != nil {
		return Endpoint{}, err
	}
	return Endpoint{Network: "unix", Address: path}, nil
}
