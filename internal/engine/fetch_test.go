package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type countingReader struct {
	calls atomic.Int64
	// gate, when set, holds every read until it is closed; entered is
	// told of each read that starts.
	gate, entered chan struct{}
	err           error
}

func (r *countingReader) GetSecret(_ context.Context, ref Ref) (Object, error) {
	r.calls.Add(1)
	if r.gate != nil {
		r.entered <- struct{}{}
		<-r.gate
	}
	if r.err != nil {
		return Object{}, r.err
	}
	return Object{Version: "1", Value: []byte(ref.Key)}, nil
}

// readOnly is a client that declares reading only.
func readOnly(r Reader) *Client {
	c, err := NewClient("test", Ops{Reader: r})
	if err != nil {
		panic(err)
	}
	return c
}

func TestFetcherSharesReadsWithinMaxAge(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	r := &countingReader{}
	c := readOnly(r)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("5 reads within max age made %d provider calls, want 1", n)
	}
	clock.Advance(61 * time.Second)
	if _, err := f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("a read older than max age must be made again: %d calls", n)
	}
	if _, err := f.Get(ctx, "s", c, Ref{Key: "k"}, 0); err != nil || r.calls.Load() != 3 {
		t.Fatalf("max age 0 must always read: %d calls, %v", r.calls.Load(), err)
	}
	if _, err := f.Get(ctx, "other-store", c, Ref{Key: "k"}, time.Minute); err != nil || r.calls.Load() != 4 {
		t.Fatalf("stores must not share entries: %d calls", r.calls.Load())
	}
}

func TestFetcherCoalescesConcurrentReads(t *testing.T) {
	f := NewFetcher(nil, nil)
	r := &countingReader{gate: make(chan struct{}), entered: make(chan struct{}, 20)}
	c := readOnly(r)
	var wg sync.WaitGroup
	// A read that joins the held one shares it; one that comes after it
	// finished is served from the cache: either way, one provider call.
	get := func() {
		defer wg.Done()
		if _, err := f.Get(context.Background(), "s", c, Ref{Key: "k"}, time.Minute); err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go get()
	<-r.entered // the first read is in flight and held
	for i := 0; i < 19; i++ {
		wg.Add(1)
		go get()
	}
	close(r.gate)
	wg.Wait()
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("20 concurrent reads made %d calls, want 1", n)
	}
}

func TestFetcherRemembersErrorsBriefly(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	r := &countingReader{err: ErrThrottled}
	c := readOnly(r)
	for i := 0; i < 3; i++ {
		if _, err := f.Get(context.Background(), "s", c, Ref{Key: "k"}, time.Minute); !errors.Is(err, ErrThrottled) {
			t.Fatalf("err = %v", err)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Fatalf("a failing key was read %d times within the error TTL, want 1", n)
	}
	clock.Advance(errorTTL + time.Millisecond)
	_, _ = f.Get(context.Background(), "s", c, Ref{Key: "k"}, time.Minute)
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("after the error TTL the key must be read again: %d calls", n)
	}
}

func TestFetcherSweep(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	r := &countingReader{}
	c := readOnly(r)
	_, _ = f.Get(context.Background(), "s", c, Ref{Key: "a"}, time.Minute)
	clock.Advance(2 * time.Hour)
	_, _ = f.Get(context.Background(), "s", c, Ref{Key: "b"}, time.Minute)
	if left := f.Sweep(time.Hour); left != 1 {
		t.Fatalf("sweep left %d entries, want 1", left)
	}
	if _, ok := f.Peek("s", Ref{Key: "b"}, time.Minute); !ok {
		t.Fatal("recent entry must survive the sweep")
	}
}

type versionedReader struct {
	countingReader
	version       string
	versionChecks atomic.Int64
}

func (r *versionedReader) GetSecret(context.Context, Ref) (Object, error) {
	r.calls.Add(1)
	return Object{Version: r.version, Value: []byte("data@" + r.version)}, nil
}

func (r *versionedReader) CurrentVersion(context.Context, string) (string, error) {
	r.versionChecks.Add(1)
	return r.version, nil
}

func TestFetcherChecksVersionBeforeReadingAgain(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	r := &versionedReader{version: "3"}
	c, _ := NewClient("test", Ops{Reader: r, Versions: r})
	ctx := context.Background()
	_, _ = f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute)
	clock.Advance(2 * time.Minute)
	got, err := f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute)
	if err != nil || string(got.Object.Value) != "data@3" {
		t.Fatalf("got %q, %v", got.Object.Value, err)
	}
	if r.calls.Load() != 1 || r.versionChecks.Load() != 1 {
		t.Fatalf("unchanged version: %d data reads, %d version checks; want 1 and 1", r.calls.Load(), r.versionChecks.Load())
	}
	if !got.FetchedAt.Equal(clock.Now()) {
		t.Fatal("a confirmed version must renew the read's age")
	}
	clock.Advance(2 * time.Minute)
	r.version = "4"
	got, _ = f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute)
	if string(got.Object.Value) != "data@4" || r.calls.Load() != 2 {
		t.Fatalf("a new version must be read: got %q after %d reads", got.Object.Value, r.calls.Load())
	}
}

func TestFetcherChecksVersionsOnlyWhereDeclared(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	// The reader could tell versions, but its client does not declare it.
	r := &versionedReader{version: "3"}
	c := readOnly(r)
	ctx := context.Background()
	_, _ = f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute)
	clock.Advance(2 * time.Minute)
	if _, err := f.Get(ctx, "s", c, Ref{Key: "k"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r.versionChecks.Load() != 0 || r.calls.Load() != 2 {
		t.Fatalf("undeclared version check: %d checks and %d reads, want 0 and 2", r.versionChecks.Load(), r.calls.Load())
	}
}

func TestFetcherReadsAnnouncedKeysOnceAfterTheAnnouncement(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	f := NewFetcher(clock, nil)
	r := &countingReader{}
	c := readOnly(r)
	ctx := context.Background()
	spec := &v1alpha1.ExternalSecretSpec{Data: []v1alpha1.ExternalSecretData{
		{SecretKey: "a", RemoteRef: v1alpha1.RemoteReference{Key: "a"}},
		{SecretKey: "b", RemoteRef: v1alpha1.RemoteReference{Key: "b"}},
	}}
	if _, err := f.Sync(ctx, Input{Spec: spec, Store: "s", Reader: c, MaxAge: time.Hour}); err != nil || r.calls.Load() != 2 {
		t.Fatalf("first sync: %d calls, %v", r.calls.Load(), err)
	}
	clock.Advance(time.Second)
	announced := map[string]time.Time{"a": clock.Now()}
	clock.Advance(time.Second)
	// Two ExternalSecrets that read the announced key: one read of it,
	// none of the other key.
	for i := 0; i < 2; i++ {
		if _, err := f.Sync(ctx, Input{Spec: spec, Store: "s", Reader: c, MaxAge: time.Hour, ReadAfter: announced}); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.calls.Load(); n != 3 {
		t.Fatalf("after an announcement of one key, two syncs made %d provider calls in all, want 3", n)
	}
	// An announcement at the moment of the sync reads anew.
	if got := maxAgeFor(Input{MaxAge: time.Hour, ReadAfter: map[string]time.Time{"a": clock.Now()}}, Ref{Key: "a"}, clock.Now()); got != 0 {
		t.Fatalf("max age for a key announced now = %v, want 0", got)
	}
	if got := maxAgeFor(Input{ReadAfter: announced}, Ref{Key: "a"}, clock.Now()); got != 0 {
		t.Fatalf("max age 0 must stay 0, got %v", got)
	}
}
