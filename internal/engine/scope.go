package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/watchword-dev/watchword/internal/failure"
)

// InScope returns a client confined to one scope of the store (seed 002:
// the namespace of the publisher that uses a store shared by several), so
// that publishers of different scopes can neither see nor touch each
// other's remote secrets. A provider with scopes of its own confines its
// operations itself (Ops.Scope); for any other store, every key becomes
// "<scope>.<key>". A scope is a Kubernetes namespace name. The wrappers of
// c apply to the scoped client too.
func (c *Client) InScope(scope string) (*Client, error) {
	if errs := validation.IsDNS1123Label(scope); len(errs) > 0 {
		return nil, fmt.Errorf("scope %q is not a namespace name: %s: %w", scope, errs[0], ErrInvalidConfig)
	}
	// A scoped client shares what its store's client holds: closing it
	// releases nothing, and it has no scopes within it.
	if c.scope == nil {
		// A namespace name has no ".", so "team.a-db" and "team-a.db"
		// never meet.
		ops := PrefixKeys(c.ops, scope+".")
		// A scoped client is for publishing: it reads no metadata.
		ops.Closer, ops.Metadata = nil, nil
		return &Client{provider: c.provider, ops: ops}, nil
	}
	ops, err := c.scope(scope)
	if err != nil {
		return nil, err
	}
	// A scoped client is for publishing: it does not watch, and reads
	// no metadata.
	ops.Scope, ops.Closer, ops.Watcher, ops.Metadata = nil, nil, nil, nil
	out, err := NewClient(c.provider, ops)
	if err != nil {
		return nil, err
	}
	for _, w := range c.wraps {
		out = out.Wrap(w)
	}
	return out, nil
}

// PrefixKeys confines ops to the keys that begin with prefix: every key
// they are given is prefixed. A provider whose scopes are parent paths
// builds its Ops.Scope with it.
func PrefixKeys(ops Ops, prefix string) Ops {
	out := Ops{Reader: prefixReader{ops.Reader, prefix}, Checker: ops.Checker, Closer: ops.Closer, BatchLimit: ops.BatchLimit}
	if ops.Batch != nil {
		out.Batch = prefixBatch{ops.Batch, prefix}
	}
	if ops.Versions != nil {
		out.Versions = prefixVersions{ops.Versions, prefix}
	}
	if ops.Lister != nil {
		out.Lister = prefixLister{ops.Lister, prefix}
	}
	if ops.Metadata != nil {
		out.Metadata = prefixMetadata{ops.Metadata, prefix}
	}
	if ops.Writer != nil {
		out.Writer = prefixWriter{ops.Writer, prefix}
	}
	return out
}

// within prefixes key, refusing a key that could climb out of the scope
// in a store whose keys are paths ("..", "." or an empty segment).
func within(prefix, key string) (string, error) {
	if slices.ContainsFunc(strings.Split(key, "/"), func(seg string) bool { return seg == ".." || seg == "." || seg == "" }) {
		return "", failure.Terminalf(failure.RemoteNameInvalid,
			"remote name %q has an empty, \".\" or \"..\" path segment, which a publisher confined to a scope may not use; choose another destination name", key)
	}
	return prefix + key, nil
}

type prefixReader struct {
	inner  Reader
	prefix string
}

func (p prefixReader) GetSecret(ctx context.Context, ref Ref) (Object, error) {
	key, err := within(p.prefix, ref.Key)
	if err != nil {
		return Object{}, err
	}
	ref.Key = key
	return p.inner.GetSecret(ctx, ref)
}

type prefixMetadata struct {
	inner  MetadataReader
	prefix string
}

func (p prefixMetadata) GetMetadata(ctx context.Context, ref Ref) (Object, error) {
	key, err := within(p.prefix, ref.Key)
	if err != nil {
		return Object{}, err
	}
	ref.Key = key
	return p.inner.GetMetadata(ctx, ref)
}

type prefixBatch struct {
	inner  BatchReader
	prefix string
}

// GetSecrets refuses a key outside the prefix as that key's own error, and
// reads the others in one call.
func (p prefixBatch) GetSecrets(ctx context.Context, refs []Ref) ([]BatchItem, error) {
	out := make([]BatchItem, len(refs))
	var in []Ref
	var at []int
	for i, ref := range refs {
		key, err := within(p.prefix, ref.Key)
		if err != nil {
			out[i].Err = err
			continue
		}
		ref.Key = key
		in = append(in, ref)
		at = append(at, i)
	}
	if len(in) == 0 {
		return out, nil
	}
	items, err := p.inner.GetSecrets(ctx, in)
	if err != nil {
		return nil, err
	}
	if len(items) != len(in) {
		return nil, fmt.Errorf("a batch read of %d objects returned %d: %w", len(in), len(items), ErrUnavailable)
	}
	for j, item := range items {
		out[at[j]] = item
	}
	return out, nil
}

type prefixVersions struct {
	inner  VersionReader
	prefix string
}

func (p prefixVersions) CurrentVersion(ctx context.Context, key string) (string, error) {
	key, err := within(p.prefix, key)
	if err != nil {
		return "", err
	}
	return p.inner.CurrentVersion(ctx, key)
}

type prefixWriter struct {
	inner  Writer
	prefix string
}

func (p prefixWriter) PutSecret(ctx context.Context, key string, pub Publication, owner Owner) (string, error) {
	key, err := within(p.prefix, key)
	if err != nil {
		return "", err
	}
	return p.inner.PutSecret(ctx, key, pub, owner)
}

func (p prefixWriter) DeleteSecret(ctx context.Context, key string, owner Owner) error {
	key, err := within(p.prefix, key)
	if err != nil {
		return err
	}
	return p.inner.DeleteSecret(ctx, key, owner)
}
