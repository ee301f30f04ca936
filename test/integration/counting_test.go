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

func (f countingFactory) New(ctx context.Context, s provider.Store, d provider.Deps) (engine.Reader, error) {
	r, err := f.inner.New(ctx, s, d)
	if err != nil {
		return nil, err
	}
	key := s.Name
	if s.Namespace != "" {
		key = s.Namespace + "/" + s.Name
	}
	return &countingReader{inner: r, key: key}, nil
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

func (c *countingReader) CurrentVersion(ctx context.Context, key string) (string, error) {
	if vr, ok := c.inner.(engine.VersionReader); ok {
		return vr.CurrentVersion(ctx, key)
	}
	return "", engine.ErrNotSupported
}

func (c *countingReader) Check(ctx context.Context) error {
	if ch, ok := c.inner.(interface{ Check(context.Context) error }); ok {
		return ch.Check(ctx)
	}
	return nil
}
