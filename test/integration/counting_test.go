package integration

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// reads counts provider reads per store ("NS/NAME", or "NAME" for a
// ClusterSecretStore).
var reads = struct {
	sync.Mutex
	n map[string]int
	// at are the times of the reads of each key, for stores whose reads
	// are timed (timeReads).
	at map[string]map[string][]time.Time
}{n: map[string]int{}, at: map[string]map[string][]time.Time{}}

// timeReads starts keeping the time of every read of store's keys.
func timeReads(store string) {
	reads.Lock()
	defer reads.Unlock()
	reads.at[store] = map[string][]time.Time{}
}

// readTimes are the times of the reads of each key of store since
// timeReads.
func readTimes(store string) map[string][]time.Time {
	reads.Lock()
	defer reads.Unlock()
	out := map[string][]time.Time{}
	for k, v := range reads.at[store] {
		out[k] = slices.Clone(v)
	}
	return out
}

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
	if at, ok := reads.at[c.key]; ok {
		at[ref.Key] = append(at[ref.Key], time.Now())
	}
	reads.Unlock()
	return c.inner.GetSecret(ctx, ref)
}
