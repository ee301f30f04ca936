package engine

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Clock tells the time; tests inject their own.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// errorTTL is how long a failed read is remembered, so that many
// ExternalSecrets wanting the same failing object do not hammer the store.
const errorTTL = 2 * time.Second

// Fetcher reads remote objects through a cache shared by every
// ExternalSecret: concurrent reads of the same (store, key, version) are
// made once, and a read younger than the caller's maximum age is reused.
//
// Tuning: provider calls follow remote objects, not ExternalSecrets: 1,000
// for the sync of 10,000 over 1,000 keys, 10 for 100 namespaces × 10 keys
// against 1,000 (FINDINGS.md, "Refreshes and the steady state"; -case
// fanout); if nothing shared a remote object, each could read its own.
type Fetcher struct {
	clock  Clock
	flight singleflight.Group

	mu      sync.Mutex
	entries map[cacheKey]*entry

	// Calls counts provider calls that read (for metrics and benchmarks):
	// a batch read is one call.
	calls func(store string, n int)

	// batchState coalesces the cache misses of a store that can batch
	// (batch.go).
	batchState
}

type cacheKey struct {
	store string
	ref   Ref
}

type entry struct {
	obj       Object
	err       error
	fetchedAt time.Time
	usedAt    time.Time
}

// NewFetcher returns a Fetcher. onCall, if set, is told about every provider
// read.
func NewFetcher(clock Clock, onCall func(store string, n int)) *Fetcher {
	if clock == nil {
		clock = RealClock
	}
	return &Fetcher{clock: clock, entries: map[cacheKey]*entry{}, calls: onCall,
		batchState: batchState{batchWindow: BatchWindow, batchHold: BatchHold, maxBatch: MaxBatch}}
}

// Fetched is one remote object with the time it was read.
type Fetched struct {
	Object    Object
	FetchedAt time.Time
}

// Get returns the object at ref from store, reading it through c unless a
// read younger than maxAge is cached. maxAge 0 always reads. When c can
// batch, the reads of the store that miss the cache together are made in
// one batch read (SetBatching).
func (f *Fetcher) Get(ctx context.Context, store string, c *Client, ref Ref, maxAge time.Duration) (Fetched, error) {
	k := cacheKey{store: store, ref: ref}
	now := f.clock.Now()
	if e := f.lookup(k, now); e != nil {
		if e.err != nil && now.Sub(e.fetchedAt) < errorTTL {
			return Fetched{}, e.err
		}
		if e.err == nil && maxAge > 0 && now.Sub(e.fetchedAt) < maxAge {
			return Fetched{Object: e.obj, FetchedAt: e.fetchedAt}, nil
		}
	}
	v, err, _ := f.flight.Do(flightKey(store, ref), func() (any, error) {
		// Another caller may have filled the cache while we waited.
		if e := f.lookup(k, f.clock.Now()); e != nil && e.err == nil && maxAge > 0 && f.clock.Now().Sub(e.fetchedAt) < maxAge {
			return Fetched{Object: e.obj, FetchedAt: e.fetchedAt}, nil
		}
		// A version check costs a call per object. A store that batches
		// gets its due objects in a batch instead (AWS Secrets Manager:
		// 20 objects a call); a batch of one is a version check
		// (batch.go).
		var stale *entry
		if e := f.lookup(k, f.clock.Now()); maxAge > 0 && e != nil && e.err == nil && ref.Version == "" && e.obj.Version != "" {
			if !f.batches(c) {
				if got, ok := f.unchanged(ctx, c, ref.Key, e); ok {
					return got, nil
				}
			}
			stale = e
		}
		obj, err := f.read(ctx, store, c, ref, stale)
		at := f.clock.Now()
		f.store(k, &entry{obj: obj, err: err, fetchedAt: at, usedAt: at})
		if err != nil {
			return nil, err
		}
		return Fetched{Object: obj, FetchedAt: at}, nil
	})
	if err != nil {
		return Fetched{}, err
	}
	return v.(Fetched), nil
}

// flightKey tells concurrent reads apart: a metadata read of an object is
// not a read of its value.
func flightKey(store string, ref Ref) string {
	k := store + "\x00" + ref.Key + "\x00" + ref.Version
	if ref.Metadata {
		k += "\x00metadata"
	}
	return k
}

// batches tells whether reads through c are made in batches.
func (f *Fetcher) batches(c *Client) bool {
	return f.maxBatch > 1 && c.Capabilities().Has(CanBatchRead)
}

// unchanged asks a provider that can tell versions cheaply whether the
// cached object is still current; if so the cached read is renewed.
func (f *Fetcher) unchanged(ctx context.Context, c *Client, key string, e *entry) (Fetched, bool) {
	vr, err := c.AsVersionReader()
	if err != nil {
		return Fetched{}, false
	}
	v, err := vr.CurrentVersion(ctx, key)
	if err != nil || v != e.obj.Version {
		return Fetched{}, false
	}
	at := f.clock.Now()
	f.mu.Lock()
	e.fetchedAt, e.usedAt = at, at
	f.mu.Unlock()
	return Fetched{Object: e.obj, FetchedAt: at}, true
}

// Peek returns a cached successful read of ref younger than maxAge, if any,
// without calling the provider.
func (f *Fetcher) Peek(store string, ref Ref, maxAge time.Duration) (Fetched, bool) {
	now := f.clock.Now()
	e := f.lookup(cacheKey{store: store, ref: ref}, now)
	if e == nil || e.err != nil || now.Sub(e.fetchedAt) >= maxAge {
		return Fetched{}, false
	}
	return Fetched{Object: e.obj, FetchedAt: e.fetchedAt}, true
}

func (f *Fetcher) lookup(k cacheKey, now time.Time) *entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[k]
	if e != nil {
		e.usedAt = now
	}
	return e
}

func (f *Fetcher) store(k cacheKey, e *entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries[k] = e
}

// Forget drops every cached read of a store, for example when its
// configuration or credentials change.
func (f *Fetcher) Forget(store string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.entries {
		if k.store == store {
			delete(f.entries, k)
		}
	}
}

// Sweep drops entries not used for idle, and returns how many remain.
func (f *Fetcher) Sweep(idle time.Duration) int {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, e := range f.entries {
		if now.Sub(e.usedAt) > idle {
			delete(f.entries, k)
		}
	}
	return len(f.entries)
}
