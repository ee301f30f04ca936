// Package plugin is the provider of stores served by out-of-tree plugins:
// it talks the plugin protocol (api/plugin/v1) over gRPC to a unix socket,
// or to a TCP address with mutual TLS (transport.go), with a deadline on
// every call and bounded message sizes, and maps the plugin's status codes
// back to the engine's error classes. The plugin's
// handshake decides the client's capabilities. pkg/plugin is the SDK a
// plugin is built with.
package plugin

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/pluginwire"
	"github.com/watchword-dev/watchword/internal/provider"
)

// CallTimeout bounds every call to a plugin, whatever the caller's
// deadline.
const CallTimeout = 10 * time.Second

// Factory builds plugin clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks the endpoint, and that a tcp:// endpoint has TLS and a
// unix socket has none.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.Plugin
	ep, err := pluginwire.ParseEndpoint(spec.Endpoint)
	if err != nil {
		return fmt.Errorf("plugin.endpoint: %w", err)
	}
	switch {
	case ep.TCP() && spec.TLS == nil:
		return fmt.Errorf("plugin.endpoint %q is a TCP address, which Watchword reaches only over mutual TLS: set plugin.tls (caSecretRef, certSecretRef and keySecretRef), or use a unix:// socket: %w", spec.Endpoint, engine.ErrInvalidConfig)
	case !ep.TCP() && spec.TLS != nil:
		return fmt.Errorf("plugin.tls is set, but plugin.endpoint %q is a unix socket, which takes no TLS: remove plugin.tls, or use a tcp:// endpoint: %w", spec.Endpoint, engine.ErrInvalidConfig)
	}
	return nil
}

// Refs are the Secrets of plugin.tls, if any; the plugin holds its own
// credentials to its store.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	t := store.Spec.Plugin.TLS
	if t == nil {
		return nil
	}
	return []provider.ObjectRef{
		provider.SecretKeyRef("plugin.tls.caSecretRef", t.CASecretRef),
		provider.SecretKeyRef("plugin.tls.certSecretRef", t.CertSecretRef),
		provider.SecretKeyRef("plugin.tls.keySecretRef", t.KeySecretRef),
	}
}

// New connects to the plugin and shakes hands: the plugin must speak
// protocol v1, accept the store's config, and announce what it can do.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.Plugin
	var tlsCfg *tls.Config
	if spec.TLS != nil {
		var err error
		if tlsCfg, err = clientTLS(ctx, spec.TLS, spec.Endpoint, deps); err != nil {
			return engine.Ops{}, err
		}
	}
	return DialTLS(ctx, spec.Endpoint, spec.Config, tlsCfg)
}

// Dial connects to the plugin at endpoint, a unix socket, for a store
// whose config is cfg, and returns the operations the plugin announced.
func Dial(ctx context.Context, endpoint string, cfg map[string]string) (engine.Ops, error) {
	return DialTLS(ctx, endpoint, cfg, nil)
}

// DialTLS is Dial with the TLS configuration of a tcp:// endpoint, which
// needs one (a unix socket takes nil).
func DialTLS(ctx context.Context, endpoint string, cfg map[string]string, tlsCfg *tls.Config) (engine.Ops, error) {
	ep, err := pluginwire.ParseEndpoint(endpoint)
	if err != nil {
		return engine.Ops{}, err
	}
	if ep.TCP() && tlsCfg == nil {
		return engine.Ops{}, fmt.Errorf("plugin endpoint %q is a TCP address: it needs mutual TLS (a CA, a client certificate and its key): %w", endpoint, engine.ErrInvalidConfig)
	}
	conn, err := grpc.NewClient(ep.Target(), dialOptions(tlsCfg)...)
	if err != nil {
		return engine.Ops{}, fmt.Errorf("plugin endpoint %q: %v: %w", endpoint, err, engine.ErrInvalidConfig)
	}
	c := &Client{conn: conn, rpc: pluginv1.NewSecretStoreClient(conn), endpoint: endpoint, config: &pluginv1.Config{Values: cfg}, tls: tlsCfg != nil}
	caps, name, err := c.handshake(ctx)
	if err != nil {
		_ = conn.Close()
		return engine.Ops{}, err
	}
	c.plugin = name
	if !caps.Has(engine.CanRead) {
		_ = conn.Close()
		return engine.Ops{}, fmt.Errorf("plugin %s announced capabilities %s, without read: %w", c.name(), caps, engine.ErrNotSupported)
	}
	c.watchConnection()
	ops := engine.Ops{Reader: c, Checker: c, Closer: c}
	if caps.Has(engine.CanCheckVersion) {
		ops.Versions = c
	}
	if caps.Has(engine.CanWrite | engine.CanDelete) {
		ops.Writer = c
	}
	if caps.Has(engine.CanList) {
		ops.Lister = c
	}
	return c.withStreams(ops, caps), nil
}

// Client calls one plugin for one store. It is not changed after Dial.
type Client struct {
	conn     *grpc.ClientConn
	rpc      pluginv1.SecretStoreClient
	endpoint string
	config   *pluginv1.Config
	// plugin is the name and version the plugin gave at the handshake.
	plugin string
	// tls tells that the connection is over TLS, for messages.
	tls bool
	// changes and stop belong to the connection's watch (transport.go).
	changes chan struct{}
	stop    context.CancelFunc
}

func (c *Client) name() string {
	if c.plugin == "" {
		return fmt.Sprintf("at %s", c.endpoint)
	}
	return fmt.Sprintf("%s at %s", c.plugin, c.endpoint)
}

func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// handshake agrees on the protocol and returns the plugin's capabilities,
// and its name and version.
func (c *Client) handshake(ctx context.Context) (engine.Capabilities, string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	offered := strings.Join(pluginwire.ProtocolVersions, ", ")
	resp, err := c.rpc.Handshake(ctx, &pluginv1.HandshakeRequest{ProtocolVersions: pluginwire.ProtocolVersions, Config: c.config})
	if err != nil {
		if status.Code(err) == codes.FailedPrecondition {
			return 0, "", protocolUnsupported(fmt.Sprintf("plugin %s speaks none of the protocol versions Watchword offered (%s)", c.name(), offered), c.error("handshake", err))
		}
		return 0, "", c.error("handshake", err)
	}
	v := resp.GetProtocolVersion()
	if !pluginwire.Speaks(v) {
		return 0, "", protocolUnsupported(fmt.Sprintf("plugin %s chose protocol version %q; Watchword speaks %s", c.name(), v, offered),
			fmt.Errorf("plugin %s chose protocol %q: %w", c.name(), v, engine.ErrNotSupported))
	}
	name := resp.GetPluginName()
	if pv := resp.GetPluginVersion(); pv != "" {
		name += " " + pv
	}
	// A plugin that chose v1 has no List call, whatever it announced.
	return pluginwire.ForVersion(v, pluginwire.Capabilities(resp.GetCapabilities())), name, nil
}

// GetSecret reads one secret.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := c.rpc.Get(ctx, &pluginv1.GetRequest{Config: c.config, Ref: &pluginv1.Ref{Key: ref.Key, Version: ref.Version}})
	if err != nil {
		return engine.Object{}, c.error(fmt.Sprintf("reading key %q%s", ref.Key, versionText(ref.Version)), err)
	}
	s := resp.GetSecret()
	return engine.Object{Version: s.GetVersion(), Value: s.GetValue(), Fields: s.GetFields()}, nil
}

// CurrentVersion tells a secret's current version.
func (c *Client) CurrentVersion(ctx context.Context, key string) (string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := c.rpc.CurrentVersion(ctx, &pluginv1.CurrentVersionRequest{Config: c.config, Key: key})
	if err != nil {
		return "", c.error(fmt.Sprintf("the current version of key %q", key), err)
	}
	return resp.GetVersion(), nil
}

// PutSecret writes a secret that owner owns.
func (c *Client) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := c.rpc.Put(ctx, &pluginv1.PutRequest{Config: c.config, Key: key, Fields: p.Fields, Labels: p.Labels,
		Annotations: p.Annotations, Type: p.Type, Owner: &pluginv1.Owner{Id: owner.ID, Adopt: owner.Adopt}})
	if err != nil {
		return "", c.error(fmt.Sprintf("writing key %q", key), err)
	}
	return resp.GetVersion(), nil
}

// DeleteSecret deletes a secret that owner owns.
func (c *Client) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	_, err := c.rpc.Delete(ctx, &pluginv1.DeleteRequest{Config: c.config, Key: key, Owner: &pluginv1.Owner{Id: owner.ID}})
	if err != nil {
		return c.error(fmt.Sprintf("deleting key %q", key), err)
	}
	return nil
}

// List asks the plugin for one page of its keys.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	limit := min(max(req.Limit, 0), pluginwire.MaxListLimit)
	resp, err := c.rpc.List(ctx, &pluginv1.ListRequest{Config: c.config, Prefix: req.Prefix, Tags: req.Tags, PageToken: req.PageToken, Limit: int32(limit)})
	if err != nil {
		return engine.ListPage{}, c.error(fmt.Sprintf("listing the keys under %q", req.Prefix), err)
	}
	if limit > 0 && len(resp.GetItems()) > limit {
		return engine.ListPage{}, fmt.Errorf("plugin %s: listing the keys under %q: a page of %d items, over the %d asked: %w", c.name(), req.Prefix, len(resp.GetItems()), limit, engine.ErrUnavailable)
	}
	page := engine.ListPage{NextPageToken: resp.GetNextPageToken(), Items: make([]engine.ListItem, 0, len(resp.GetItems()))}
	for _, it := range resp.GetItems() {
		page.Items = append(page.Items, engine.ListItem{Key: it.GetKey(), Version: it.GetVersion(), Tags: it.GetTags()})
	}
	return page, nil
}

// Check shakes hands again: the plugin is up and accepts the config.
func (c *Client) Check(ctx context.Context) error {
	_, _, err := c.handshake(ctx)
	return err
}

// Close ends the connection's watch and closes the connection.
func (c *Client) Close() error {
	if c.stop != nil {
		c.stop()
	}
	return c.conn.Close()
}

func versionText(v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf(" at version %q", v)
}
