package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The defaults of a Fetcher's batching.
const (
	// BatchWindow is how long the first cache miss of a batch waits for
	// others of the same store to join it.
	BatchWindow = 5 * time.Millisecond
	// MaxBatch is the most refs of one batch read; a full batch is sent
	// at once.
	MaxBatch = 50
)

// SetBatching changes how the Fetcher coalesces cache misses of a store
// whose client can batch (CanBatchRead): misses within window of the
// first of a batch are read with one BatchReader call, sent when the
// window ends or max refs are waiting. max 1 or less reads one by one.
// Call it before the Fetcher is used.
func (f *Fetcher) SetBatching(window time.Duration, maxRefs int) {
	f.batchWindow, f.maxBatch = window, maxRefs
}

// batchKey is a client of a store: a new client of a store (a new
// generation) does not join a batch of the old one.
type batchKey struct {
	store  string
	client *Client
}

// batch is the refs of one store waiting for one batch read.
type batch struct {
	key    batchKey
	reader BatchReader
	ctx    context.Context
	refs   []Ref
	// stale are the cached reads of refs that fell due (nil for a miss):
	// a batch of one due ref is a version check, not a read.
	stale   []*entry
	waiters []chan BatchItem
	timer   *time.Timer
	sent    bool
}

// read reads ref from the store through c: through a batch read shared
// with the other misses of the store when c can batch, on its own
// otherwise. The outcome is the same either way: an object, or that
// object's own error, or the error of the call. stale is the cached read
// of ref that fell due, or nil.
func (f *Fetcher) read(ctx context.Context, store string, c *Client, ref Ref, stale *entry) (Object, error) {
	br, err := c.AsBatchReader()
	if err != nil || f.maxBatch <= 1 {
		if f.calls != nil {
			f.calls(store, 1)
		}
		return c.GetSecret(ctx, ref)
	}
	done := f.enqueue(ctx, batchKey{store: store, client: c}, br, ref, stale)
	select {
	case item := <-done:
		return item.Object, item.Err
	case <-ctx.Done():
		return Object{}, ctx.Err()
	}
}

// enqueue adds ref to the store's waiting batch, starting one if none
// waits, and sends the batch once it is full.
func (f *Fetcher) enqueue(ctx context.Context, key batchKey, br BatchReader, ref Ref, stale *entry) <-chan BatchItem {
	done := make(chan BatchItem, 1)
	f.bmu.Lock()
	defer f.bmu.Unlock()
	if f.pending == nil {
		f.pending = map[batchKey]*batch{}
	}
	b := f.pending[key]
	if b == nil {
		b = &batch{key: key, reader: br, ctx: context.WithoutCancel(ctx)}
		f.pending[key] = b
		b.timer = time.AfterFunc(f.batchWindow, func() { f.send(b) })
	}
	b.refs = append(b.refs, ref)
	b.stale = append(b.stale, stale)
	b.waiters = append(b.waiters, done)
	limit := f.maxBatch
	if l := key.client.BatchLimit(); l > 0 && l < limit {
		// The store takes no more in one call.
		limit = l
	}
	if len(b.refs) >= limit {
		// Full: the next miss starts a new batch.
		b.timer.Stop()
		delete(f.pending, key)
		go f.send(b)
	}
	return done
}

// send reads a batch with one call and hands each waiter its item; an
// error of the call is every waiter's error.
func (f *Fetcher) send(b *batch) {
	f.bmu.Lock()
	if b.sent {
		f.bmu.Unlock()
		return
	}
	b.sent = true
	if f.pending[b.key] == b {
		delete(f.pending, b.key)
	}
	f.bmu.Unlock()
	if len(b.refs) == 1 && b.stale[0] != nil {
		// A due read alone in its window: the version check reads no
		// value, and renews the cached read when nothing changed.
		if vr, err := b.key.client.AsVersionReader(); err == nil {
			if v, err := vr.CurrentVersion(b.ctx, b.refs[0].Key); err == nil && v == b.stale[0].obj.Version {
				b.waiters[0] <- BatchItem{Object: b.stale[0].obj}
				return
			}
		}
	}
	if f.calls != nil {
		f.calls(b.key.store, 1)
	}
	items, err := b.reader.GetSecrets(b.ctx, b.refs)
	if err == nil && len(items) != len(b.refs) {
		err = fmt.Errorf("a batch read of %d objects returned %d: %w", len(b.refs), len(items), ErrUnavailable)
	}
	for i, w := range b.waiters {
		if err != nil {
			w <- BatchItem{Err: err}
			continue
		}
		w <- items[i]
	}
}

// batchState is the Fetcher's batching: its settings and the batches
// waiting, one per store client.
type batchState struct {
	batchWindow time.Duration
	maxBatch    int
	bmu         sync.Mutex
	pending     map[batchKey]*batch
}
