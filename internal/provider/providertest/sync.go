package providertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// Workers are the controller's ExternalSecret workers by default
// (--workers); a store that sets no maxConcurrentCalls has half as many
// call slots.
const Workers = 16

// Writes is the most a reconcile spends after its read, writing the
// target Secret and the status to the API server: each takes a time drawn
// evenly from [0, Writes], so that the workers of one batch come back for
// their next keys spread out, as they do in the controller.
const Writes = 50 * time.Millisecond

// Sync reads keys the way the controller's workers do when as many
// ExternalSecrets, one key each, fall due within spread of each other (0:
// at once; a second: created by one apply, or queued by a restart): each
// key joins a queue at a time drawn evenly from [0, spread], and Workers
// goroutines take one key at a time from it and read it through f (maxAge a minute),
// with the store's call gate in front of client (Workers/2 call slots, as
// a store without limits of its own has). A read the gate holds back is
// queued again after the time it asks for, as the work queue does, while
// the worker goes on with the next key (f's clock must move, as Clock
// does, for the cached refusal to expire). After a read, the worker spends
// up to Writes on the reconcile's writes. want checks what a key read. Sync
// returns when every key was read, or fails t after a minute.
func Sync(t testing.TB, f *engine.Fetcher, store string, client *engine.Client, keys []string, spread time.Duration, want func(key string, obj engine.Object) error) {
	t.Helper()
	gate := engine.NewGate(engine.GateLimits{MaxConcurrent: Workers / 2}, nil, nil)
	gated := client.Wrap(gate.Wrap)
	queue := make(chan string, len(keys))
	for _, k := range keys {
		if spread <= 0 {
			queue <- k
			continue
		}
		time.AfterFunc(rand.N(spread+1), func() { queue <- k })
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var left sync.WaitGroup
	left.Add(len(keys))
	var mu sync.Mutex
	var failed []string
	for range Workers {
		go func() {
			for {
				var key string
				select {
				case key = <-queue:
				case <-ctx.Done():
					return
				}
				got, err := f.Get(ctx, store, gated, engine.Ref{Key: key}, time.Minute)
				if errors.Is(err, engine.ErrHeldBack) {
					after, _ := failure.RetryAfter(err)
					time.AfterFunc(after, func() { queue <- key })
					continue
				}
				if err == nil {
					err = want(key, got.Object)
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s: %v", key, err))
					mu.Unlock()
				}
				time.Sleep(rand.N(Writes + 1))
				left.Done()
			}
		}()
	}
	done := make(chan struct{})
	go func() { left.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("the %d keys were not all read within a minute", len(keys))
	}
	cancel()
	for _, e := range failed {
		t.Errorf("%s", e)
	}
}

// Clock is the wall clock moved forward by Advance, for a Fetcher whose
// cached reads are to fall due at once.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the wall clock's time plus what Advance added.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
