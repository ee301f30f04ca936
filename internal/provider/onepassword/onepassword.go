// Package onepassword is a provider for the items of 1Password, through a
// 1Password Connect server, on 1Password's official Go SDK for Connect
// (connect-sdk-go). A remote key is an item's title (or its ID), searched
// in the store's vaults in their priority order; the item's fields (by
// label) and files (by name) are its fields, and its version is the item's
// version. It lists the items of the vaults, and writes and deletes items
// that carry its ownership field (for publishing).
package onepassword

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/1Password/connect-sdk-go/connect"
	"github.com/opentracing/opentracing-go"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds Connect clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks what CEL cannot say as plainly: the Connect host is an
// address alone, and the vaults' priorities are distinct.
func (Factory) Validate(store provider.Store) error {
	spec := store.Spec.OnePassword
	u, err := url.Parse(spec.ConnectHost)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%w: onepassword.connectHost must be the Connect server's address alone, such as http://onepassword-connect:8080", engine.ErrInvalidConfig)
	}
	if len(spec.Vaults) == 0 {
		return fmt.Errorf("%w: onepassword.vaults must name at least one vault, with its priority (1 is searched first)", engine.ErrInvalidConfig)
	}
	seen := map[int32]string{}
	for name, prio := range spec.Vaults {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("%w: onepassword.vaults has an empty vault name", engine.ErrInvalidConfig)
		}
		if other, dup := seen[prio]; dup {
			return fmt.Errorf("%w: onepassword.vaults gives vaults %q and %q the same priority %d: give each its own", engine.ErrInvalidConfig, min(name, other), max(name, other), prio)
		}
		seen[prio] = name
	}
	return nil
}

// Refs names the Connect token.
func (Factory) Refs(store provider.Store) []provider.ObjectRef {
	return []provider.ObjectRef{provider.SecretKeyRef("onepassword.auth.secretRef.connectTokenSecretRef",
		store.Spec.OnePassword.Auth.SecretRef.ConnectToken)}
}

// New reads the token and builds the client; it makes no request.
func (f Factory) New(ctx context.Context, store provider.Store, deps provider.Deps) (engine.Ops, error) {
	if err := f.Validate(store); err != nil {
		return engine.Ops{}, err
	}
	spec := store.Spec.OnePassword
	sel := spec.Auth.SecretRef.ConnectToken
	token, err := deps.SecretValue(ctx, sel)
	if err != nil {
		return engine.Ops{}, err
	}
	tok := strings.TrimSpace(string(token))
	if tok == "" {
		return engine.Ops{}, fmt.Errorf("%w: onepassword.auth.secretRef.connectTokenSecretRef: key %q of Secret %q is empty: put the Connect token there",
			engine.ErrInvalidConfig, sel.Key, store.NamespaceOf(sel.Namespace)+"/"+sel.Name)
	}
	// The SDK starts a Jaeger tracer of its own (which reports over UDP
	// and polls a sampling server) unless a global tracer is registered:
	// a no-op one is, so that the SDK sends nothing but its requests.
	if !opentracing.IsGlobalTracerRegistered() {
		opentracing.SetGlobalTracer(opentracing.NoopTracer{})
	}
	type vp struct {
		name string
		prio int32
	}
	var order []vp
	for name, prio := range spec.Vaults {
		order = append(order, vp{name, prio})
	}
	slices.SortFunc(order, func(a, b vp) int { return cmp.Compare(a.prio, b.prio) })
	c := &Client{
		api:  connect.NewClientWithUserAgent(strings.TrimSuffix(spec.ConnectHost, "/"), tok, "watchword"),
		host: spec.ConnectHost,
		who:  fmt.Sprintf("the Connect token in key %q of Secret %q", sel.Key, store.NamespaceOf(sel.Namespace)+"/"+sel.Name),
	}
	for _, v := range order {
		c.vaults = append(c.vaults, v.name)
	}
	return engine.Ops{Reader: c, Versions: c, Lister: c, Writer: c}, nil
}
