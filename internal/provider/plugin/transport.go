package plugin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/pluginwire"
	"github.com/watchword-dev/watchword/internal/provider"
)

// MaxReconnectDelay bounds the backoff between two attempts to reach a
// plugin that went away, so that one that comes back is used again soon.
const MaxReconnectDelay = 30 * time.Second

func dialOptions(tlsCfg *tls.Config) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	bo := backoff.DefaultConfig
	bo.MaxDelay = MaxReconnectDelay
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(pluginwire.MaxMessageSize), grpc.MaxCallSendMsgSize(pluginwire.MaxMessageSize)),
	}
}

// clientTLS builds the mutual TLS of a tcp:// endpoint from the Secrets
// that plugin.tls names.
func clientTLS(ctx context.Context, spec *v1alpha1.PluginTLS, endpoint string, deps provider.Deps) (*tls.Config, error) {
	caPEM, err := deps.SecretValue(ctx, spec.CASecretRef)
	if err != nil {
		return nil, fmt.Errorf("plugin.tls.caSecretRef: %w", err)
	}
	certPEM, err := deps.SecretValue(ctx, spec.CertSecretRef)
	if err != nil {
		return nil, fmt.Errorf("plugin.tls.certSecretRef: %w", err)
	}
	keyPEM, err := deps.SecretValue(ctx, spec.KeySecretRef)
	if err != nil {
		return nil, fmt.Errorf("plugin.tls.keySecretRef: %w", err)
	}
	ep, err := pluginwire.ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	serverName := spec.ServerName
	if serverName == "" {
		serverName = ep.Host()
	}
	return ClientTLSConfig(caPEM, certPEM, keyPEM, serverName)
}

// ClientTLSConfig is the TLS configuration of Watchword's end of a
// tcp:// plugin connection: the plugin's certificate must chain to caPEM
// and hold serverName, and Watchword presents certPEM with keyPEM. Its
// errors name what is wrong with which part, never the key.
func ClientTLSConfig(caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("plugin.tls.caSecretRef holds no PEM certificate: %w", engine.ErrInvalidConfig)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The text of tls.X509KeyPair names the PEM blocks it found,
		// never their contents.
		return nil, fmt.Errorf("plugin.tls.certSecretRef and keySecretRef are no matching PEM certificate and private key (%v): %w", err, engine.ErrInvalidConfig)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: serverName}, nil
}

// ConnectionChanges receives a value when the connection to the plugin
// is lost or comes back: a change the store's condition should follow.
// Several changes may come as one. It is closed by Close.
func (c *Client) ConnectionChanges() <-chan struct{} { return c.changes }

// watchConnection follows the connection's state until Close: a lost
// connection is re-established at once (with gRPC's backoff between
// attempts) rather than at the next call, and each loss and recovery is
// told on ConnectionChanges.
func (c *Client) watchConnection() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.changes = make(chan struct{}, 1)
	go func() {
		defer close(c.changes)
		state := c.conn.GetState()
		up := state == connectivity.Ready
		for c.conn.WaitForStateChange(ctx, state) {
			state = c.conn.GetState()
			if state == connectivity.Idle {
				c.conn.Connect()
			}
			if now := state == connectivity.Ready; now != up && (now || state != connectivity.Connecting) {
				up = now
				select {
				case c.changes <- struct{}{}:
				default:
				}
			}
		}
	}()
}

// error turns a failed call into the engine's error; a call that failed
// because the plugin cannot be reached is PluginUnavailable, with what
// is wrong with the connection. Its message ends with the cause: whether
// and when the call is made again is its caller's to say (a store's
// condition says it is retried; `agent --once` exits).
func (c *Client) error(what string, err error) error {
	wrapped := pluginwire.Error(c.name(), what, err)
	if status.Code(err) != codes.Unavailable || c.conn.GetState() == connectivity.Ready {
		// An answer of the plugin (its store is unavailable), not a
		// missing plugin.
		return wrapped
	}
	return &failure.Error{
		Class: failure.Class{Reason: failure.PluginUnavailable},
		Msg:   fmt.Sprintf("plugin %s: %s: the plugin cannot be reached: %s", c.name(), what, connectionProblem(status.Convert(err).Message(), c.tls)),
		Err:   wrapped,
	}
}

// connectionProblem says in words what gRPC's text of a failed
// connection means.
func connectionProblem(msg string, withTLS bool) string {
	closed := strings.Contains(msg, "EOF") || strings.Contains(msg, "closing") || strings.Contains(msg, "reset") || strings.Contains(msg, "broken pipe")
	switch {
	case strings.Contains(msg, "no such file or directory"):
		return "its socket does not exist (is the plugin running?)"
	case strings.Contains(msg, "connection refused"):
		return "nothing listens there (is the plugin running?)"
	case strings.Contains(msg, "unknown authority"):
		return "the TLS handshake failed: the plugin's certificate is not signed by the CA of plugin.tls.caSecretRef"
	case strings.Contains(msg, "is valid for") || strings.Contains(msg, "not valid for") || strings.Contains(msg, "doesn't contain any IP SANs"):
		return "the TLS handshake failed: the plugin's certificate is not valid for the endpoint's host (set plugin.tls.serverName to the name it holds)"
	case strings.Contains(msg, "bad certificate") || strings.Contains(msg, "certificate required") || strings.Contains(msg, "unknown certificate"):
		return "the TLS handshake failed: the plugin refused the client certificate of plugin.tls.certSecretRef"
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:") || strings.Contains(msg, "authentication handshake failed"):
		return "the TLS handshake failed: " + msg
	case closed && withTLS:
		// With TLS 1.3 the client learns that the server refused its
		// certificate only when the server closes the connection.
		return "the plugin closed the connection during or right after the TLS handshake (does it accept the client certificate of plugin.tls.certSecretRef? is the plugin stopping?)"
	case closed:
		return "the connection was closed (did the plugin stop?)"
	default:
		return "the connection failed: " + msg
	}
}

// protocolUnsupported is the error of a plugin that shares no protocol
// version with Watchword; it keeps the class of cause. As for an
// unreachable plugin, retrying is its caller's to say.
func protocolUnsupported(msg string, cause error) error {
	if cause == nil {
		cause = errors.New(msg)
	}
	return &failure.Error{
		Class: failure.Class{Reason: failure.PluginProtocolUnsupported},
		Msg:   msg + "; upgrade the plugin or Watchword so that they share one",
		Err:   cause,
	}
}

var _ provider.ConnectionWatcher = (*Client)(nil)
