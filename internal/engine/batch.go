package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The defaults of a Fetcher's batching.
//
// Tuning: misses of a batching store that come together are one call: 30
// keys in 13 calls (memory plugin), 100 in 21 BatchGetSecretValue calls
// (FINDINGS.md, "Stores that batch"); if a store's single reads cost as
// little, SetBatching with max 1 reads one by one.
const (
	// BatchWindow is how long the first cache miss of a batch waits for
	// others of the same store to join it, when no call of the store's
	// batches is in flight.
	BatchWindow = 5 * time.Millisecond
	// BatchHold is the longest a batch waits for the store's call in
	// flight to end before it is sent all the same: a call that hangs
	// (until CallTimeout) does not hold the reads behind it as long.
	BatchHold = time.Second
	// MaxBatch is the most refs of one batch read; a full batch is sent
	// at once.
	MaxBatch = 50
)

// SetBatching changes how the Fetcher coalesces cache misses of a store
// whose client can batch (CanBatchRead). A batch is sent when it is full
// (max refs, or the store's BatchLimit); otherwise it gathers misses for
// window after its first, and then for as long as a batch of the same
// store client is in flight (at most BatchHold, or window if longer): the
// misses that come while a call is under way are sent together when it
// ends, so that a store with latency gets few full calls rather than a
// call for each few milliseconds' worth of misses. max 1 or less reads
// one by one. Call it before the Fetcher is used.
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
	// started is when the first ref joined; windowOver that the window
	// after it ended.
	started    time.Time
	windowOver bool
	sent       bool
}

// read reads ref from the store through c: through a batch read shared
// with the other misses of the store when c can batch, on its own
// otherwise. The outcome is the same either way: an object, or that
// object's own error, or the error of the call. stale is the cached read
// of ref that fell due, or nil.
func (f *Fetcher) read(ctx context.Context, store string, c *Client, ref Ref, stale *entry) (Object, error) {
	if ref.Metadata {
		// Metadata is read one object at a time: no store batches it.
		mr, err := c.AsMetadataReader()
		if err != nil {
			return Object{}, fmt.Errorf("metadataPolicy Fetch: %w", err)
		}
		if f.calls != nil {
			f.calls(store, 1)
		}
		return mr.GetMetadata(ctx, ref)
	}
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
		// The batch is sent for every caller that joins it: it takes no
		// caller's turn in line (Turn), and outlives the first one.
		b = &batch{key: key, reader: br, ctx: WithTurn(context.WithoutCancel(ctx), Turn{}), started: time.Now()}
		f.pending[key] = b
		b.timer = time.AfterFunc(f.batchWindow, func() { f.windowEnded(b) })
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
		// Full: sent now, whatever is in flight; the next miss starts a
		// new batch.
		f.dispatch(b)
	}
	return done
}

// windowEnded sends b at the end of its window, unless a batch of its
// store client is in flight: then b goes on gathering misses until that
// call ends, or until the hold runs out. f.bmu is not held.
func (f *Fetcher) windowEnded(b *batch) {
	f.bmu.Lock()
	defer f.bmu.Unlock()
	if b.sent {
		return
	}
	b.windowOver = true
	if f.inflight[b.key] == 0 {
		f.dispatch(b)
		return
	}
	hold := max(f.batchHold, f.batchWindow)
	b.timer = time.AfterFunc(time.Until(b.started.Add(hold)), func() {
		f.bmu.Lock()
		defer f.bmu.Unlock()
		if !b.sent {
			f.dispatch(b)
		}
	})
}

// dispatch sends b, counted in flight until its call ends; f.bmu is held.
func (f *Fetcher) dispatch(b *batch) {
	b.sent = true
	b.timer.Stop()
	if f.pending[b.key] == b {
		delete(f.pending, b.key)
	}
	if f.inflight == nil {
		f.inflight = map[batchKey]int{}
	}
	f.inflight[b.key]++
	go f.send(b)
}

// ended is told that a batch call of key ended: the batch that waited
// for it, if its window is over, is sent now with every miss it gathered.
func (f *Fetcher) ended(key batchKey) {
	f.bmu.Lock()
	defer f.bmu.Unlock()
	f.inflight[key]--
	if f.inflight[key] > 0 {
		return
	}
	delete(f.inflight, key)
	if b := f.pending[key]; b != nil && b.windowOver {
		f.dispatch(b)
	}
}

// send reads a batch with one call and hands each waiter its item; an
// error of the call is every waiter's error.
func (f *Fetcher) send(b *batch) {
	defer f.ended(b.key)
	if len(b.refs) == 1 && b.stale[0] != nil {
		// A due read alone in its batch: the version check reads no
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

// batchState is the Fetcher's batching: its settings, the batches
// waiting (one per store client) and the batch calls in flight.
type batchState struct {
	batchWindow time.Duration
	batchHold   time.Duration
	maxBatch    int
	bmu         sync.Mutex
	pending     map[batchKey]*batch
	inflight    map[batchKey]int
}
