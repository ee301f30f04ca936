package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchingReader reads one by one or in batches, counting both; "missing"
// does not exist, and err fails every batch call.
type batchingReader struct {
	singles, batches atomic.Int64
	mu               sync.Mutex
	sizes            []int
	err              error
}

func (r *batchingReader) GetSecret(_ context.Context, ref Ref) (Object, error) {
	r.singles.Add(1)
	return r.object(ref)
}

func (r *batchingReader) object(ref Ref) (Object, error) {
	if ref.Key == "missing" {
		return Object{}, fmt.Errorf("key %q: %w", ref.Key, ErrNotFound)
	}
	return Object{Version: "1", Value: []byte("value-of-" + ref.Key)}, nil
}

func (r *batchingReader) GetSecrets(_ context.Context, refs []Ref) ([]BatchItem, error) {
	r.batches.Add(1)
	r.mu.Lock()
	r.sizes = append(r.sizes, len(refs))
	r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	out := make([]BatchItem, len(refs))
	for i, ref := range refs {
		out[i].Object, out[i].Err = r.object(ref)
	}
	return out, nil
}

func batching(r *batchingReader) *Client {
	c, err := NewClient("test", Ops{Reader: r, Batch: r})
	if err != nil {
		panic(err)
	}
	return c
}

// getAll reads keys concurrently and returns each key's outcome.
func getAll(f *Fetcher, c *Client, keys []string) map[string]error {
	var mu sync.Mutex
	out := map[string]error{}
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := f.Get(context.Background(), "s", c, Ref{Key: k}, time.Minute)
			if err == nil && string(got.Object.Value) != "value-of-"+k {
				err = fmt.Errorf("key %q read another key's object", k)
			}
			mu.Lock()
			out[k] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func keyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("key-%d", i)
	}
	return out
}

func TestFetcherBatchesConcurrentMissesOfAStore(t *testing.T) {
	const n = 20
	f := NewFetcher(&fakeClock{t: time.Unix(1000, 0)}, nil)
	// The batch goes out when n refs wait: no timing in the test.
	f.SetBatching(time.Hour, n)
	r := &batchingReader{}
	c := batching(r)
	for k, err := range getAll(f, c, keyNames(n)) {
		if err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
	if b, s := r.batches.Load(), r.singles.Load(); b != 1 || s != 0 {
		t.Fatalf("%d concurrent misses made %d batch calls and %d single reads, want 1 and 0", n, b, s)
	}
	// The batch filled the cache as single reads do.
	getAll(f, c, keyNames(n))
	if b := r.batches.Load(); b != 1 {
		t.Fatalf("reads within max age after a batch made %d batch calls, want still 1", b)
	}
}

func TestFetcherBatchSendsAfterTheWindow(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Millisecond, 100)
	r := &batchingReader{}
	if _, err := f.Get(context.Background(), "s", batching(r), Ref{Key: "alone"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if b := r.batches.Load(); b != 1 {
		t.Fatalf("a lone miss made %d batch calls, want 1 once the window ended", b)
	}
}

func TestFetcherBatchBoundsItsSize(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Hour, 5)
	r := &batchingReader{}
	getAll(f, batching(r), keyNames(15))
	if b := r.batches.Load(); b != 3 {
		t.Fatalf("15 misses with batches of 5 made %d calls (sizes %v), want 3", b, r.sizes)
	}
}

func TestFetcherBatchKeepsErrorsPerItem(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	f.SetBatching(time.Hour, 3)
	r := &batchingReader{}
	c := batching(r)
	got := getAll(f, c, []string{"a", "missing", "b"})
	if got["a"] != nil || got["b"] != nil {
		t.Fatalf("the keys that exist failed with another key's error: a %v, b %v", got["a"], got["b"])
	}
	if !errors.Is(got["missing"], ErrNotFound) {
		t.Fatalf("the missing key: %v, want ErrNotFound", got["missing"])
	}
	// The item's error is remembered for the error TTL, as a single
	// read's: no call within it.
	if _, err := f.Get(context.Background(), "s", c, Ref{Key: "missing"}, time.Minute); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the missing key again: %v", err)
	}
	if b, s := r.batches.Load(), r.singles.Load(); b != 1 || s != 0 {
		t.Fatalf("a failed key read again within the error TTL: %d batch calls, %d single reads", b, s)
	}
}

func TestFetcherBatchCallErrorFailsEveryRef(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Hour, 2)
	r := &batchingReader{err: fmt.Errorf("store down: %w", ErrUnavailable)}
	for k, err := range getAll(f, batching(r), []string{"a", "b"}) {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("key %q: %v, want the call's ErrUnavailable", k, err)
		}
	}
}

func TestFetcherWithoutBatchReadsOneByOne(t *testing.T) {
	const n = 10
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Hour, n)
	r := &batchingReader{}
	c, err := NewClient("test", Ops{Reader: r}) // it could batch, but does not declare it
	if err != nil {
		t.Fatal(err)
	}
	for k, err := range getAll(f, c, keyNames(n)) {
		if err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
	if b, s := r.batches.Load(), r.singles.Load(); b != 0 || s != n {
		t.Fatalf("a store without batchRead: %d batch calls and %d single reads, want 0 and %d", b, s, n)
	}
}

// TestFetcherBatchHonoursTheStoresLimit: a store that accepts at most 10
// refs a call (Ops.BatchLimit) never gets more, whatever the Fetcher's
// own maximum, and a wrapper keeps the limit.
func TestFetcherBatchHonoursTheStoresLimit(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Hour, MaxBatch)
	r := &batchingReader{}
	c, err := NewClient("test", Ops{Reader: r, Batch: r, BatchLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	c = c.Wrap(func(o Ops) Ops { return o })
	if c.BatchLimit() != 10 {
		t.Fatalf("the wrapped client's BatchLimit = %d, want 10", c.BatchLimit())
	}
	for k, err := range getAll(f, c, keyNames(30)) {
		if err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
	if b := r.batches.Load(); b != 3 {
		t.Fatalf("30 misses with a store limit of 10 made %d calls (sizes %v), want 3", b, r.sizes)
	}
	for _, n := range r.sizes {
		if n > 10 {
			t.Errorf("a batch of %d refs was sent to a store that takes 10 (sizes %v)", n, r.sizes)
		}
	}
}

// versionedBatcher is a batching store that can also tell versions.
type versionedBatcher struct {
	batchingReader
	versionChecks atomic.Int64
}

func (r *versionedBatcher) CurrentVersion(context.Context, string) (string, error) {
	r.versionChecks.Add(1)
	return "1", nil
}

// TestFetcherBatchReReadsInsteadOfCheckingVersions: when cached reads of a
// store that batches fall due, they are read again together (a call per
// batch) rather than confirmed one by one (a call per object).
func TestFetcherBatchReReadsInsteadOfCheckingVersions(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	f.SetBatching(time.Hour, 10)
	r := &versionedBatcher{}
	c, err := NewClient("test", Ops{Reader: r, Batch: r, Versions: r})
	if err != nil {
		t.Fatal(err)
	}
	getAll(f, c, keyNames(10))
	clock.Advance(2 * time.Minute)
	getAll(f, c, keyNames(10))
	if b, v := r.batches.Load(), r.versionChecks.Load(); b != 2 || v != 0 {
		t.Fatalf("a due refresh of 10 objects: %d batch calls and %d version checks, want 2 and 0", b, v)
	}
}

// TestFetcherLoneDueReadIsAVersionCheck: a cached read that falls due
// alone in its batch window is confirmed by a version check (no value is
// read) and renewed.
func TestFetcherLoneDueReadIsAVersionCheck(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	f.SetBatching(time.Millisecond, 10)
	r := &versionedBatcher{}
	c, err := NewClient("test", Ops{Reader: r, Batch: r, Versions: r})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = f.Get(context.Background(), "s", c, Ref{Key: "alone"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	got, err := f.Get(context.Background(), "s", c, Ref{Key: "alone"}, time.Minute)
	if err != nil || string(got.Object.Value) != "value-of-alone" {
		t.Fatalf("due read: %v", err)
	}
	if b, v := r.batches.Load(), r.versionChecks.Load(); b != 1 || v != 1 {
		t.Fatalf("a lone due read: %d batch calls and %d version checks, want 1 (the first read) and 1", b, v)
	}
	// Renewed: within max age again, no call.
	if _, err = f.Get(context.Background(), "s", c, Ref{Key: "alone"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if b, v := r.batches.Load(), r.versionChecks.Load(); b != 1 || v != 1 {
		t.Fatalf("a renewed read was read again: %d batch calls, %d version checks", b, v)
	}
}

// blockingBatcher is a batching store whose first batch call waits until
// release is closed (a call in flight at a store with latency); the
// others answer at once. entered is told of every batch call.
type blockingBatcher struct {
	batchingReader
	release chan struct{}
	entered chan int
	first   atomic.Bool
}

func newBlockingBatcher() *blockingBatcher {
	return &blockingBatcher{release: make(chan struct{}), entered: make(chan int, 100)}
}

func (r *blockingBatcher) GetSecrets(ctx context.Context, refs []Ref) ([]BatchItem, error) {
	r.entered <- len(refs)
	if r.first.CompareAndSwap(false, true) {
		<-r.release
	}
	return r.batchingReader.GetSecrets(ctx, refs)
}

// getAsync reads key in the background; the outcome arrives on the
// channel returned.
func getAsync(f *Fetcher, c *Client, key string) <-chan error {
	out := make(chan error, 1)
	go func() {
		got, err := f.Get(context.Background(), "s", c, Ref{Key: key}, time.Minute)
		if err == nil && string(got.Object.Value) != "value-of-"+key {
			err = fmt.Errorf("key %q read another key's object", key)
		}
		out <- err
	}()
	return out
}

func waitEntered(t *testing.T, r *blockingBatcher) int {
	t.Helper()
	select {
	case n := <-r.entered:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no batch call within 10s")
		return 0
	}
}

// TestFetcherBatchGathersWhileACallIsInFlight: misses that come one by
// one, each in a window of its own, while a batch call of the store is in
// flight are not sent each in a call of their own: they wait for that
// call to end and go out together in one.
func TestFetcherBatchGathersWhileACallIsInFlight(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Millisecond, 20)
	r := newBlockingBatcher()
	c, err := NewClient("test", Ops{Reader: r, Batch: r})
	if err != nil {
		t.Fatal(err)
	}
	first := getAsync(f, c, "first")
	if n := waitEntered(t, r); n != 1 {
		t.Fatalf("the first call carried %d refs, want 1", n)
	}
	var later []<-chan error
	for _, k := range []string{"a", "b", "c", "d"} {
		later = append(later, getAsync(f, c, k))
		// Well past the window: each miss would be a batch of its own.
		time.Sleep(30 * time.Millisecond)
	}
	if n := len(r.entered); n != 0 {
		t.Fatalf("%d batch calls while the first was in flight, want none", n)
	}
	close(r.release)
	if n := waitEntered(t, r); n != 4 {
		t.Fatalf("after the call in flight, a call of %d refs; want the 4 that waited, together", n)
	}
	for _, ch := range append(later, first) {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	if b := r.batches.Load(); b != 2 {
		t.Fatalf("%d batch calls (sizes %v), want 2", b, r.sizes)
	}
}

// TestFetcherBatchDoesNotWaitForeverBehindACall: a batch waits for the
// call in flight at most the hold, then goes out all the same; a full
// batch does not wait at all.
func TestFetcherBatchDoesNotWaitForeverBehindACall(t *testing.T) {
	f := NewFetcher(nil, nil)
	f.SetBatching(time.Millisecond, 3)
	f.batchHold = 50 * time.Millisecond
	r := newBlockingBatcher()
	defer close(r.release)
	c, err := NewClient("test", Ops{Reader: r, Batch: r})
	if err != nil {
		t.Fatal(err)
	}
	getAsync(f, c, "hangs")
	waitEntered(t, r)
	if err := <-getAsync(f, c, "held"); err != nil {
		t.Fatalf("a miss behind a call that hangs: %v", err)
	}
	var full []<-chan error
	for _, k := range []string{"x", "y", "z"} {
		full = append(full, getAsync(f, c, k))
	}
	for _, ch := range full {
		if err := <-ch; err != nil {
			t.Fatalf("a full batch behind a call that hangs: %v", err)
		}
	}
}
