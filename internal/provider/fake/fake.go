// Package fake is a provider whose data lives in the store's own spec:
// static values with versions, an optional simulated latency and an
// optional injected error. It backs the demo and the tests.
package fake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Factory builds fake clients.
type Factory struct{}

var _ provider.Factory = Factory{}

// Validate checks that no entry sets both value and valueMap and that
// versions are unique per key.
func (Factory) Validate(store provider.Store) error {
	_, err := index(store.Spec.Fake)
	return err
}

// Refs is empty: a fake store has no credentials.
func (Factory) Refs(provider.Store) []provider.ObjectRef { return nil }

// New returns a client over the spec's data. It reads and lists, and
// reads metadata where an entry sets some; nothing else.
func (Factory) New(_ context.Context, store provider.Store, _ provider.Deps) (engine.Ops, error) {
	idx, err := index(store.Spec.Fake)
	if err != nil {
		return engine.Ops{}, err
	}
	c := &Client{objects: idx, injected: store.Spec.Fake.Error}
	if l := store.Spec.Fake.Latency; l != nil {
		c.latency = l.Duration
	}
	ops := engine.Ops{Reader: c, Lister: c}
	// Only a store with metadata reads it (metadataPolicy Fetch).
	if slices.ContainsFunc(store.Spec.Fake.Data, func(d v1alpha1.FakeProviderData) bool { return len(d.Metadata) > 0 }) {
		ops.Metadata = c
	}
	return ops, nil
}

// Client reads from an indexed fake spec.
type Client struct {
	objects  map[string][]version
	latency  time.Duration
	injected *v1alpha1.FakeProviderError
}

type version struct {
	name string
	obj  engine.Object
	meta map[string]string
}

func index(spec *v1alpha1.FakeProvider) (map[string][]version, error) {
	out := map[string][]version{}
	for i, d := range spec.Data {
		if d.Value != "" && len(d.ValueMap) > 0 {
			return nil, fmt.Errorf("%w: fake.data[%d] (key %q) sets both value and valueMap; set one", engine.ErrInvalidConfig, i, d.Key)
		}
		name := d.Version
		if name == "" {
			name = strconv.Itoa(len(out[d.Key]) + 1)
		}
		if slices.ContainsFunc(out[d.Key], func(v version) bool { return v.name == name }) {
			return nil, fmt.Errorf("%w: fake.data[%d]: key %q has version %q twice", engine.ErrInvalidConfig, i, d.Key, name)
		}
		obj := engine.Object{Version: name}
		if len(d.ValueMap) > 0 {
			obj.Fields = make(map[string][]byte, len(d.ValueMap))
			for k, v := range d.ValueMap {
				obj.Fields[k] = []byte(v)
			}
		} else {
			obj.Value = []byte(d.Value)
		}
		out[d.Key] = append(out[d.Key], version{name: name, obj: obj, meta: d.Metadata})
	}
	return out, nil
}

// GetSecret returns the current or the pinned version of a key.
func (c *Client) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	v, err := c.lookup(ctx, ref)
	return v.obj, err
}

// GetMetadata returns the metadata of the current or the pinned version
// of a key, one field per entry.
func (c *Client) GetMetadata(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	v, err := c.lookup(ctx, ref)
	if err != nil {
		return engine.Object{}, err
	}
	fields := make(map[string][]byte, len(v.meta))
	for k, m := range v.meta {
		fields[k] = []byte(m)
	}
	return engine.Object{Fields: fields}, nil
}

func (c *Client) lookup(ctx context.Context, ref engine.Ref) (version, error) {
	if err := c.wait(ctx); err != nil {
		return version{}, err
	}
	if err := c.injectedError(ref.Key); err != nil {
		return version{}, err
	}
	versions := c.objects[ref.Key]
	if len(versions) == 0 {
		return version{}, fmt.Errorf("key %q does not exist in the fake store: %w", ref.Key, engine.ErrNotFound)
	}
	if ref.Version == "" {
		return versions[len(versions)-1], nil
	}
	for _, v := range versions {
		if v.name == ref.Version {
			return v, nil
		}
	}
	names := make([]string, len(versions))
	for i, v := range versions {
		names[i] = v.name
	}
	return version{}, fmt.Errorf("key %q has no version %q (versions: %s): %w", ref.Key, ref.Version, strings.Join(names, ", "), engine.ErrNotFound)
}

// List lists the keys of the spec in order, with their current
// versions, a page after the last key of the previous one. A fake store
// has no tags: a request for some is refused. An injected error that
// names no keys fails the listing too.
func (c *Client) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	if err := c.wait(ctx); err != nil {
		return engine.ListPage{}, err
	}
	if len(req.Tags) > 0 {
		return engine.ListPage{}, fmt.Errorf("a fake store has no tags to list by: %w", engine.ErrNotSupported)
	}
	if e := c.injected; e != nil && len(e.Keys) == 0 {
		return engine.ListPage{}, c.injectedError("")
	}
	var keys []string
	for k := range c.objects {
		if strings.HasPrefix(k, req.Prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	page, next := engine.PageAfter(keys, req.PageToken, req.Limit)
	out := engine.ListPage{NextPageToken: next, Items: make([]engine.ListItem, 0, len(page))}
	for _, k := range page {
		versions := c.objects[k]
		out.Items = append(out.Items, engine.ListItem{Key: k, Version: versions[len(versions)-1].name})
	}
	return out, nil
}

// wait is the simulated latency of a call.
func (c *Client) wait(ctx context.Context) error {
	if c.latency <= 0 {
		return nil
	}
	t := time.NewTimer(c.latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", engine.ErrUnavailable, ctx.Err())
	case <-t.C:
		return nil
	}
}

func (c *Client) injectedError(key string) error {
	e := c.injected
	if e == nil || (len(e.Keys) > 0 && !slices.Contains(e.Keys, key)) {
		return nil
	}
	msg := e.Message
	if msg == "" {
		msg = "injected error"
	}
	class := map[string]error{
		"NotFound":         engine.ErrNotFound,
		"PermissionDenied": engine.ErrPermissionDenied,
		"Unauthenticated":  engine.ErrUnauthenticated,
		"Unavailable":      engine.ErrUnavailable,
		"Throttled":        engine.ErrThrottled,
		"InvalidConfig":    engine.ErrInvalidConfig,
	}[e.Reason]
	if class == nil {
		class = errors.New(e.Reason)
	}
	if e.Reason == "Throttled" && e.RetryAfter != nil && e.RetryAfter.Duration > 0 {
		return engine.ThrottledFor(e.RetryAfter.Duration, msg)
	}
	return fmt.Errorf("%s: %w", msg, class)
}
