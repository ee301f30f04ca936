package integration

import (
	"context"
	"sync"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// reads counts provider reads per store ("NS/NAME", or "NAME" for a
// ClusterSecretStore).
var reads = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func readCount(store string) int {
	reads.Lock()
	defer reads.Unlock()
	return reads.n[store]
}

// countingFactory wraps a real factory and counts the reads of its clients.
type countingFactory struct{ inner provider.Factory }

func (f countingFactory) Validate(s provider.Store) error { return f.inner.Validate(s) }

func (f countingFactory) Refs(s provider.Store) []provider.ObjectRef { return f.inner.Refs(s) }

func (f countingFactory) New(ctx context.Context, s provider.Store, d provider.Deps) (engine.Ops, error) {
	ops, err := f.inner.New(ctx, s, d)
	if err != nil {
		return engine.Ops{}, err
	}
	key := s.Name
	if s.Namespace != "" {
		key = s.Namespace + "/" + s.Name
	}
	ops.Reader = &countingReader{inner: ops.Reader, key: key}
	return ops, nil
}

type countingReader struct {
	inner engine.Reader
	key   string
}

func (c *countingReader) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	reads.Lock()
	reads.n[c.key]++
	reads.Unlock()
	return c.inner.GetSecret(ctx, ref)
}
