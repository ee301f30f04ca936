package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// starvedRefreshes simulates callers that each want a read every interval
// from a store whose budget gives a quarter of what they want, each
// coming back when a refusal says (plus up to half of it as jitter, as the
// ExternalSecret controller does), for d of simulated time. It returns the
// longest time any caller went without a read, and the reads made.
func starvedRefreshes(t *testing.T, withTurns bool, callers int, interval, d time.Duration) (time.Duration, int) {
	t.Helper()
	perMinute := float64(callers) * float64(time.Minute) / float64(interval) / 4
	g, clock, _ := newTestGate(GateLimits{CallsPerMinute: perMinute, Burst: 1})
	// The simulation moves the clock; a delayed call is counted at the
	// time it was let through, its budget already reserved.
	g.sleep = func(context.Context, time.Duration) error { return nil }
	store := &answering{}
	r := gatedReader{store, g}
	start := clock.Now()
	rnd := rand.New(rand.NewPCG(1, 2))
	next := make([]time.Time, callers)
	last := make([]time.Time, callers)
	for i := range callers {
		// Their first reads spread over one interval.
		last[i] = start.Add(time.Duration(i) * interval / time.Duration(callers)).Add(-interval)
		next[i] = last[i].Add(interval)
	}
	var longest time.Duration
	reads := 0
	for {
		i := 0
		for j := range callers {
			if next[j].Before(next[i]) {
				i = j
			}
		}
		now := next[i]
		if now.Sub(start) > d {
			break
		}
		clock.mu.Lock()
		clock.now = now
		clock.mu.Unlock()
		ctx := context.Background()
		if withTurns {
			ctx = WithTurn(ctx, Turn{Key: fmt.Sprintf("es-%03d", i)})
		}
		_, err := r.GetSecret(ctx, Ref{Key: "k"})
		if err != nil {
			wait, _ := retryAfterOf(err)
			next[i] = now.Add(wait + time.Duration(rnd.Int64N(int64(wait/2)+1)))
			continue
		}
		reads++
		longest = max(longest, now.Sub(last[i]))
		last[i], next[i] = now, now.Add(interval)
	}
	for i := range callers {
		longest = max(longest, next[i].Sub(last[i]))
	}
	return longest, reads
}

func retryAfterOf(err error) (time.Duration, bool) {
	type retryAfter interface{ RetryAfter() time.Duration }
	for e := err; e != nil; {
		if r, ok := e.(retryAfter); ok {
			return r.RetryAfter(), true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return time.Second, false
}

// TestTurnsBoundTheWaitOfStarvedRefreshes: 200 callers that each want a
// read every 10 s, from a budget of a quarter of that. With turns, each is
// read once in every round of the line, about four intervals, and none
// waits more than six; the budget is used in full either way.
func TestTurnsBoundTheWaitOfStarvedRefreshes(t *testing.T) {
	const callers, interval, d = 200, 10 * time.Second, 30 * time.Minute
	fair, fairReads := starvedRefreshes(t, true, callers, interval, d)
	free, freeReads := starvedRefreshes(t, false, callers, interval, d)
	t.Logf("longest wait between reads: %s with turns (%d reads), %s without (%d reads); %s is one round of the line",
		fair, fairReads, free, freeReads, 4*interval)
	if fair > 6*interval {
		t.Errorf("with turns a caller went %s without a read, more than 6 intervals (%s)", fair, 6*interval)
	}
	budget := int(d / interval * callers / 4)
	if fairReads < budget*9/10 {
		t.Errorf("with turns %d reads in %s, where the budget allows %d: turns waste the budget", fairReads, d, budget)
	}
}

// TestTurnsKeepTheirReservedCall: with the budget spent, callers turned
// away are each told a later time, in the order they asked; coming back
// early is refused again, coming back on time is served, a caller
// without a turn waits behind the line, and a caller that never comes
// back gives its place up.
func TestTurnsKeepTheirReservedCall(t *testing.T) {
	g, clock, _ := newTestGate(GateLimits{CallsPerMinute: 6, Burst: 1}) // a call every 10 s
	g.sleep = func(_ context.Context, d time.Duration) error { clock.advance(d); return nil }
	store := &answering{}
	r := gatedReader{store, g}
	call := func(key string) (time.Duration, error) {
		ctx := context.Background()
		if key != "" {
			ctx = WithTurn(ctx, Turn{Key: key})
		}
		_, err := r.GetSecret(ctx, Ref{Key: "k"})
		wait, _ := retryAfterOf(err)
		return wait, err
	}
	if _, err := call("first"); err != nil {
		t.Fatalf("the budget's first call: %v", err)
	}
	var waits []time.Duration
	for _, k := range []string{"a", "b", "c"} {
		wait, err := call(k)
		if err == nil {
			t.Fatalf("%s was served with the budget spent", k)
		}
		waits = append(waits, wait)
	}
	if !slices.Equal(waits, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}) {
		t.Fatalf("told to come back after %v, want 10s, 20s, 30s: one call each, in the order asked", waits)
	}
	if wait, err := call(""); err == nil || wait < 30*time.Second {
		t.Fatalf("a call without a turn: %v, told %s; want a refusal behind the line (40s)", err, wait)
	}
	if n := g.Waiting(); n != 3 {
		t.Fatalf("%d waiting, want 3", n)
	}
	clock.advance(10 * time.Second)
	if wait, err := call("c"); err == nil || wait != 20*time.Second {
		t.Fatalf("c, back 20 s early: %v, told %s; want a refusal with the 20 s left", err, wait)
	}
	if _, err := call("a"); err != nil {
		t.Fatalf("a, back on time: %v", err)
	}
	clock.advance(15 * time.Second) // later than told is fine
	if _, err := call("b"); err != nil {
		t.Fatalf("b, back late: %v", err)
	}
	if got := store.calls.Load(); got != 3 {
		t.Errorf("%d calls reached the store, want 3 (first, a, b)", got)
	}
	// c never comes back: its place is given up after its time, the
	// jitter and the grace.
	clock.advance(time.Minute)
	_, _ = call("")
	if n := g.Waiting(); n != 0 {
		t.Errorf("%d still waiting after c's ticket expired", n)
	}
}

// TestTurnsHoldOneCallPerRefusedRead: a sync that reads two keys, both
// turned away, keeps two reserved calls, and both are served when it
// comes back, without asking the budget again.
func TestTurnsHoldOneCallPerRefusedRead(t *testing.T) {
	g, clock, _ := newTestGate(GateLimits{CallsPerMinute: 6, Burst: 1}) // a call every 10 s
	g.sleep = func(_ context.Context, d time.Duration) error { clock.advance(d); return nil }
	store := &answering{}
	r := gatedReader{store, g}
	ctx := WithTurn(context.Background(), Turn{Key: "ns/es"})
	if _, err := r.GetSecret(context.Background(), Ref{Key: "other"}); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for _, k := range []string{"a", "b"} {
		_, err := r.GetSecret(ctx, Ref{Key: k})
		if err == nil {
			t.Fatalf("read %s served with the budget spent", k)
		}
		w, _ := retryAfterOf(err)
		waits = append(waits, w)
	}
	if n := g.Waiting(); n != 2 {
		t.Fatalf("%d calls reserved, want one per refused read (2); told %v", n, waits)
	}
	clock.advance(waits[1])
	for _, k := range []string{"a", "b"} {
		if _, err := r.GetSecret(ctx, Ref{Key: k}); err != nil {
			t.Fatalf("read %s, back after both reserved times: %v", k, err)
		}
	}
	if got := store.calls.Load(); got != 3 {
		t.Errorf("%d calls reached the store, want 3", got)
	}
}

// TestTurnsKeepTheirPlaceWhenNoSlotIsFree: a call that took its turn from
// the budget but found no free call slot is not sent, and keeps a call
// already paid for: coming back, it is served without waiting again.
func TestTurnsKeepTheirPlaceWhenNoSlotIsFree(t *testing.T) {
	g, clock, _ := newTestGate(GateLimits{CallsPerMinute: 6, Burst: 1, MaxConcurrent: 1})
	g.sleep = func(_ context.Context, d time.Duration) error { clock.advance(d); return nil }
	release := make(chan struct{})
	started := make(chan struct{})
	slow := readerFunc(func(context.Context, Ref) (Object, error) {
		close(started)
		<-release
		return Object{}, nil
	})
	go func() { _, _ = gatedReader{slow, g}.GetSecret(context.Background(), Ref{Key: "slow"}) }()
	<-started
	clock.advance(10 * time.Second) // the budget has a call again
	ctx := WithTurn(context.Background(), Turn{Key: "ns/es"})
	store := &answering{}
	_, err := gatedReader{store, g}.GetSecret(ctx, Ref{Key: "k"})
	if err == nil || !strings.Contains(err.Error(), "calls in flight") {
		t.Fatalf("with the only slot taken: %v, want a busy refusal", err)
	}
	close(release)
	if n := g.Waiting(); n != 1 {
		t.Fatalf("%d calls kept for the caller, want the one it paid for", n)
	}
	// Back at once: the budget has nothing until 10 s later, yet the
	// paid call is served.
	if _, err := (gatedReader{store, g}).GetSecret(ctx, Ref{Key: "k"}); err != nil {
		t.Fatalf("back with a paid call: %v", err)
	}
}

// TestBatchesTakeNoCallersTurn: a batch read is sent for every caller
// that joins it; it carries none's turn.
func TestBatchesTakeNoCallersTurn(t *testing.T) {
	ctx := WithTurn(WithTurn(context.Background(), Turn{Key: "ns/es"}), Turn{})
	if _, ok := turnFrom(ctx); ok {
		t.Fatal("an empty turn over a caller's still carries the caller's")
	}
}

// TestListingHoldNamesNoKeys: a store held after listings that could not
// reach it tells every caller what failed, not the prefix or the keys of
// the listing that failed (another namespace's, through a
// ClusterSecretStore).
func TestListingHoldNamesNoKeys(t *testing.T) {
	g, _, _ := newTestGate(GateLimits{})
	l := gatedLister{listFunc(func(_ context.Context, req ListRequest) (ListPage, error) {
		return ListPage{}, fmt.Errorf("listing the secrets under %q: tenant-b/payments/db was unreadable: %w", req.Prefix, ErrUnavailable)
	}), g}
	for range 2 {
		_, _ = l.List(context.Background(), ListRequest{Prefix: "tenant-b/payments/"})
	}
	_, err := gatedReader{&answering{}, g}.GetSecret(context.Background(), Ref{Key: "tenant-a/app"})
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("after two unreachable listings: %v, want the store held", err)
	}
	if strings.Contains(err.Error(), "tenant-b") || !strings.Contains(err.Error(), "a listing of the store's keys failed") {
		t.Errorf("the hold tells another caller %q", err.Error())
	}
}

type listFunc func(context.Context, ListRequest) (ListPage, error)

func (f listFunc) List(ctx context.Context, req ListRequest) (ListPage, error) { return f(ctx, req) }
