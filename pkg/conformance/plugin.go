package conformance

import (
	"context"
	"crypto/tls"

	"github.com/watchword-dev/watchword/internal/engine"
	pluginprovider "github.com/watchword-dev/watchword/internal/provider/plugin"
)

// DialPlugin connects to a store plugin at endpoint (unix:///…; DialPluginTLS for tcp://) as
// Watchword's plugin provider does, for a store whose config is cfg, and
// returns the operations the plugin announced: the Ops of a Harness that
// runs the suite against an out-of-tree plugin. Close them with
// ops.Closer.Close.
func DialPlugin(ctx context.Context, endpoint string, cfg map[string]string) (engine.Ops, error) {
	return pluginprovider.Dial(ctx, endpoint, cfg)
}

// DialPluginTLS is DialPlugin for a plugin on a tcp:// endpoint, with the
// mutual TLS of Watchword's end (see ClientTLS).
func DialPluginTLS(ctx context.Context, endpoint string, cfg map[string]string, tlsCfg *tls.Config) (engine.Ops, error) {
	return pluginprovider.DialTLS(ctx, endpoint, cfg, tlsCfg)
}

// ClientTLS is the TLS configuration Watchword uses towards a tcp://
// plugin, from PEM: the CA the plugin's certificate must chain to, the
// client certificate and its key, and the name the plugin's certificate
// must hold.
func ClientTLS(caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, error) {
	return pluginprovider.ClientTLSConfig(caPEM, certPEM, keyPEM, serverName)
}
