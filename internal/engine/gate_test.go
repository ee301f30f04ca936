package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/failure"
)

// stepClock is a clock that moves only when told, or when the gate sleeps.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingObserver counts what a gate does.
type countingObserver struct {
	sent, delayed atomic.Int64
	mu            sync.Mutex
	refused       map[string]int
}

func (o *countingObserver) CallSent()    { o.sent.Add(1) }
func (o *countingObserver) CallDelayed() { o.delayed.Add(1) }
func (o *countingObserver) CallRefused(cause string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused == nil {
		o.refused = map[string]int{}
	}
	o.refused[cause]++
}

// answering is a store that answers every read with err and counts the
// calls that reached it.
type answering struct {
	calls atomic.Int64
	err   error
	// started, when not nil, is closed as a call begins, which then waits
	// for release.
	started, release chan struct{}
}

func (a *answering) GetSecret(context.Context, Ref) (Object, error) {
	a.calls.Add(1)
	if a.started != nil {
		close(a.started)
		<-a.release
	}
	return Object{}, a.err
}

func newTestGate(l GateLimits) (*Gate, *stepClock, *countingObserver) {
	clock := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	obs := &countingObserver{}
	g := NewGate(l, clock, obs)
	g.sleep = func(_ context.Context, d time.Duration) error { clock.advance(d); return nil }
	return g, clock, obs
}

func TestGateBudgetBoundsTheCallsOfEveryCaller(t *testing.T) {
	// Outcome: whatever callers want (here a call every 100 ms, 600 a
	// minute), no more than burst + callsPerMinute per elapsed minute
	// reach the store; the rest are delayed (at most MaxBudgetWait) or
	// refused with ErrThrottled and the time to wait.
	g, clock, obs := newTestGate(GateLimits{CallsPerMinute: 60, Burst: 10})
	store := &answering{}
	r := gatedReader{store, g}
	start := clock.Now()
	var refused int
	for clock.Now().Sub(start) < 10*time.Minute {
		_, err := r.GetSecret(context.Background(), Ref{Key: "k"})
		if err != nil {
			refused++
			if !errors.Is(err, ErrHeldBack) || !errors.Is(err, ErrThrottled) {
				t.Fatalf("a refusal of the budget has class %s, want Throttled: %v", failure.Classify(err).Reason, err)
			}
			if d, ok := failure.RetryAfter(err); !ok || d <= 0 {
				t.Fatalf("a refusal of the budget does not say when to retry: %v", err)
			}
		}
		clock.advance(100 * time.Millisecond)
	}
	elapsed := clock.Now().Sub(start)
	bound := 10 + int64(60*elapsed.Minutes()) + 1
	t.Logf("over %s: %d calls reached the store (bound %d), %d delayed, %d refused", elapsed, store.calls.Load(), bound, obs.delayed.Load(), refused)
	if got := store.calls.Load(); got > bound {
		t.Fatalf("%d calls reached the store in %s; the budget allows %d", got, elapsed, bound)
	}
	if store.calls.Load() < 60*9 {
		t.Fatalf("only %d calls reached the store in %s: the budget of 60 a minute was not used", store.calls.Load(), elapsed)
	}
	if obs.sent.Load() != store.calls.Load() {
		t.Fatalf("observer counted %d sent, the store saw %d", obs.sent.Load(), store.calls.Load())
	}
}

func TestGateBoundsConcurrentCalls(t *testing.T) {
	// Outcome: with maxConcurrentCalls 3, never more than 3 calls are in
	// flight at once; a caller that finds every slot taken for SlotWait
	// is refused with ErrHeldBack (class Throttled, retry in
	// BusyRetry) instead of holding its worker.
	obs := &countingObserver{}
	g := NewGate(GateLimits{MaxConcurrent: 3}, nil, obs)
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	slow := readerFunc(func(context.Context, Ref) (Object, error) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		return Object{}, nil
	})
	r := gatedReader{slow, g}
	var wg sync.WaitGroup
	var ok, busy atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.GetSecret(context.Background(), Ref{Key: "k"})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrHeldBack) && errors.Is(err, ErrThrottled):
				if d, has := failure.RetryAfter(err); !has || d != BusyRetry {
					t.Errorf("a busy refusal asks to retry after %s, %v", d, has)
				}
				busy.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	// The 17 callers without a slot give up after SlotWait; then the 3
	// calls in flight end.
	for busy.Load() < 17 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	t.Logf("20 callers, limit 3: at most %d calls in flight, %d sent, %d refused as busy", most.Load(), ok.Load(), busy.Load())
	if most.Load() != 3 || ok.Load() != 3 || busy.Load() != 17 {
		t.Fatalf("at most %d in flight, %d sent, %d busy; want 3, 3, 17", most.Load(), ok.Load(), busy.Load())
	}
	if obs.refused[RefusedBusy] != 17 {
		t.Fatalf("the observer counted %d busy refusals, want 17", obs.refused[RefusedBusy])
	}
}

type readerFunc func(context.Context, Ref) (Object, error)

func (f readerFunc) GetSecret(ctx context.Context, ref Ref) (Object, error) { return f(ctx, ref) }

func TestGateHoldsAStoreThatRefusedTheCredentials(t *testing.T) {
	// Outcome: a revoked credential reaches the store at most 8 times in
	// an hour, whatever the callers try (one every second): holds of 1,
	// 2, 4, 8 then 15 minutes. The refusals keep the reason
	// PermissionDenied and say until when the store is held.
	g, clock, obs := newTestGate(GateLimits{})
	store := &answering{err: fmt.Errorf("reading key %q: %w", "db", ErrUnauthenticated)}
	r := gatedReader{store, g}
	start := clock.Now()
	var last error
	for clock.Now().Sub(start) < time.Hour {
		_, last = r.GetSecret(context.Background(), Ref{Key: "db"})
		clock.advance(time.Second)
	}
	t.Logf("in an hour of a call a second: %d reached the store, %d refused by the gate", store.calls.Load(), obs.refused[RefusedUnauthenticated])
	if got := store.calls.Load(); got > 8 {
		t.Fatalf("%d calls reached a store that refused the credentials within an hour; want at most 8", got)
	}
	var held *HeldError
	if !errors.As(last, &held) {
		t.Fatalf("a call during the hold returned %v, want a HeldError", last)
	}
	if c := failure.Classify(last); c.Reason != failure.PermissionDenied || c.Terminal {
		t.Fatalf("a held call has class %+v, want PermissionDenied, retried", c)
	}
	if !strings.Contains(last.Error(), "no call is sent to the store until") {
		t.Fatalf("a held call does not say until when: %q", last)
	}

	// The credentials change: the next call goes through at once.
	store.err = nil
	g.ResetAuth()
	before := store.calls.Load()
	if _, err := r.GetSecret(context.Background(), Ref{Key: "db"}); err != nil {
		t.Fatalf("after the credentials changed, a call was refused: %v", err)
	}
	if store.calls.Load() != before+1 {
		t.Fatal("after the credentials changed, the call did not reach the store")
	}
}

func TestGateDoesNotHoldNewCredentialsForAnOldRefusal(t *testing.T) {
	// Outcome: a call made with the old credentials that is refused after
	// they were replaced (ResetAuth while it was under way) does not hold
	// the store: the next call, with the new ones, goes through.
	g, _, _ := newTestGate(GateLimits{})
	started, release := make(chan struct{}), make(chan struct{})
	old := &answering{err: fmt.Errorf("logging in: %w", ErrUnauthenticated), started: started, release: release}
	done := make(chan error, 1)
	go func() {
		_, err := gatedReader{old, g}.GetSecret(context.Background(), Ref{Key: "db"})
		done <- err
	}()
	<-started
	g.ResetAuth() // the credentials changed while the old call was under way
	close(release)
	if err := <-done; !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("the old call: %v", err)
	}
	fresh := &answering{}
	if _, err := (gatedReader{fresh, g}).GetSecret(context.Background(), Ref{Key: "db"}); err != nil {
		t.Fatalf("a call with the new credentials was refused: %v", err)
	}
	if fresh.calls.Load() != 1 {
		t.Fatal("the call with the new credentials did not reach the store")
	}
	// A refusal of the new credentials still holds the store.
	fresh.err = fmt.Errorf("logging in: %w", ErrUnauthenticated)
	_, _ = gatedReader{fresh, g}.GetSecret(context.Background(), Ref{Key: "db"})
	var held *HeldError
	if _, err := (gatedReader{fresh, g}).GetSecret(context.Background(), Ref{Key: "db"}); !errors.As(err, &held) {
		t.Fatalf("after the new credentials were refused: %v, want a hold", err)
	}
}

func TestGateHonoursRetryAfter(t *testing.T) {
	// Outcome: after a throttling answer with Retry-After 5s, no call
	// reaches the store for 5 s; without one, the hold is 2 s and doubles.
	for _, tc := range []struct {
		name  string
		err   error
		holds []time.Duration
	}{
		{"retry after 5s", failure.ThrottledFor(5*time.Second, "reading key \"db\""), []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"no retry after", fmt.Errorf("reading key %q: %w", "db", ErrThrottled), []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, clock, _ := newTestGate(GateLimits{})
			store := &answering{err: tc.err}
			r := gatedReader{store, g}
			for i, hold := range tc.holds {
				start := clock.Now()
				calls := store.calls.Load()
				_, err := r.GetSecret(context.Background(), Ref{Key: "db"})
				if store.calls.Load() != calls+1 || !errors.Is(err, ErrThrottled) {
					t.Fatalf("call %d: did not reach the store, or not throttled: %v", i, err)
				}
				for clock.Now().Sub(start) < hold {
					_, err := r.GetSecret(context.Background(), Ref{Key: "db"})
					var held *HeldError
					if !errors.As(err, &held) {
						t.Fatalf("call %d: %s after a throttling answer, a call was not held: %v", i, clock.Now().Sub(start), err)
					}
					if d, ok := failure.RetryAfter(err); !ok || d <= 0 || d > hold {
						t.Fatalf("held call asks to retry after %s, %v; want within %s", d, ok, hold)
					}
					clock.advance(250 * time.Millisecond)
				}
				if store.calls.Load() != calls+1 {
					t.Fatalf("call %d: %d calls reached the store during a hold of %s", i, store.calls.Load()-calls-1, hold)
				}
			}
		})
	}
}

func TestGateKeepsTheCapabilitiesOfTheClient(t *testing.T) {
	s := stubOps{}
	g := NewGate(GateLimits{CallsPerMinute: 60, Burst: 1}, nil, nil)
	for _, ops := range []Ops{{Reader: s}, {Reader: s, Versions: s, Writer: s}, {Reader: s, Batch: s, Watcher: s}, {Reader: s, Lister: s}} {
		c, err := NewClient("stub", ops)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Wrap(g.Wrap).Capabilities(); got != c.Capabilities() {
			t.Fatalf("gated client has %s, the client has %s", got, c.Capabilities())
		}
	}
}

// TestGateSpendsTheBudgetOnListPages: every page of a listing is a call
// of the store's budget, so that a listing refreshed often cannot spend
// more than the store allows.
func TestGateSpendsTheBudgetOnListPages(t *testing.T) {
	g, _, obs := newTestGate(GateLimits{CallsPerMinute: 1, Burst: 2})
	l := &sliceLister{keys: []string{"a", "b", "c", "d", "e", "f"}}
	gated := g.Wrap(Ops{Reader: stubOps{}, Lister: l}).Lister
	_, err := ListAll(context.Background(), gated, ListRequest{Limit: 2}, nil, 0)
	if !errors.Is(err, ErrHeldBack) {
		t.Fatalf("a listing of three pages within a budget of two calls: got %v, want ErrHeldBack", err)
	}
	if l.calls != 2 || obs.sent.Load() != 2 {
		t.Fatalf("%d pages reached the store (%d sent), want the 2 the budget allows", l.calls, obs.sent.Load())
	}
}

func TestGateLimitsChangeInPlace(t *testing.T) {
	g, _, _ := newTestGate(GateLimits{CallsPerMinute: 60, Burst: 1})
	store := &answering{}
	r := gatedReader{store, g}
	if _, err := r.GetSecret(context.Background(), Ref{}); err != nil {
		t.Fatal(err)
	}
	g.SetLimits(GateLimits{})
	for range 100 {
		if _, err := r.GetSecret(context.Background(), Ref{}); err != nil {
			t.Fatalf("without a budget, a call was refused: %v", err)
		}
	}
	if g.Limits() != (GateLimits{}) {
		t.Fatalf("limits are %+v after they were removed", g.Limits())
	}
}

func TestGateHoldsAnUnreachableStore(t *testing.T) {
	// Outcome: a store that cannot be reached gets one call in a while,
	// not one per caller and retry: with a caller every second for ten
	// minutes, a first failure holds nothing (it may be a blip), then
	// holds of 1, 2, 4, 8, 16 and 30 seconds. Once the store answers
	// again, the first call after the hold goes through and ends the
	// strikes.
	g, clock, obs := newTestGate(GateLimits{})
	store := &answering{}
	down := true
	r := gatedReader{readerFunc(func(ctx context.Context, ref Ref) (Object, error) {
		if !down {
			return store.GetSecret(ctx, ref)
		}
		store.calls.Add(1)
		return Object{}, fmt.Errorf("reading key %q: dial tcp: connection refused: %w", ref.Key, ErrUnavailable)
	}), g}
	start := clock.Now()
	var last error
	keys := []string{"team-a/db", "team-b/api"}
	for i := 0; clock.Now().Sub(start) < 10*time.Minute; i++ {
		_, last = r.GetSecret(context.Background(), Ref{Key: keys[i%2]})
		clock.advance(time.Second)
	}
	t.Logf("ten minutes of a call a second to an unreachable store: %d reached it, %d refused by the gate",
		store.calls.Load(), obs.refused[RefusedUnreachable])
	// 2 calls, then 6 doubling holds within the first 63 s, then one call
	// per 30 s hold: about 26.
	if got := store.calls.Load(); got > 30 {
		t.Fatalf("%d calls reached an unreachable store in ten minutes; want at most 30", got)
	}
	var held *HeldError
	if !errors.As(last, &held) || !errors.Is(last, ErrUnavailable) {
		t.Fatalf("a call during the hold returned %v, want a HeldError of class unavailable", last)
	}
	if msg := last.Error(); !strings.Contains(msg, "could not be reached") || !strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "team-a/db") || strings.Contains(msg, "team-b/api") {
		t.Fatalf("a held call says %q: want why, without the key of the call that failed", msg)
	}

	down = false
	until, kind := g.HeldUntil()
	if kind != RefusedUnreachable {
		t.Fatalf("hold kind %q, want %q", kind, RefusedUnreachable)
	}
	clock.advance(until.Sub(clock.Now()))
	if _, err := r.GetSecret(context.Background(), Ref{Key: "db"}); err != nil {
		t.Fatalf("the first call after the hold: %v", err)
	}
	// One more failure is a blip again: no hold.
	down = true
	_, _ = r.GetSecret(context.Background(), Ref{Key: "db"})
	if _, kind := g.HeldUntil(); kind != "" {
		t.Fatalf("a single failure after a success held the store (%s)", kind)
	}
}

// TestGateEndsAnUnreachableHoldWhenTheConnectionChanges: ResetUnreachable
// (the connection to the store came back) ends an unreachable hold at once
// and forgets the failures, and leaves a hold of another kind.
func TestGateEndsAnUnreachableHoldWhenTheConnectionChanges(t *testing.T) {
	g, _, _ := newTestGate(GateLimits{})
	down := fmt.Errorf("dial: connection refused: %w", ErrUnavailable)
	r := gatedReader{readerFunc(func(context.Context, Ref) (Object, error) { return Object{}, down }), g}
	for range 4 {
		_, _ = r.GetSecret(context.Background(), Ref{Key: "db"})
	}
	if _, kind := g.HeldUntil(); kind != RefusedUnreachable {
		t.Fatalf("hold %q, want %q", kind, RefusedUnreachable)
	}
	g.ResetUnreachable()
	if _, kind := g.HeldUntil(); kind != "" {
		t.Fatalf("after ResetUnreachable the store is held (%s)", kind)
	}
	// The failures were forgotten: one more is a blip again.
	_, _ = r.GetSecret(context.Background(), Ref{Key: "db"})
	if _, kind := g.HeldUntil(); kind != "" {
		t.Fatalf("a single failure after ResetUnreachable held the store (%s)", kind)
	}

	throttled := gatedReader{readerFunc(func(context.Context, Ref) (Object, error) {
		return Object{}, fmt.Errorf("slow down: %w", ErrThrottled)
	}), g}
	_, _ = throttled.GetSecret(context.Background(), Ref{Key: "db"})
	g.ResetUnreachable()
	if _, kind := g.HeldUntil(); kind != RefusedThrottled {
		t.Fatalf("ResetUnreachable ended a hold of kind %q", kind)
	}
}

// TestGateHoldsNothingForACallersInput: a run of calls refused for their
// own input (a remote name the store cannot hold, as a provider tells
// before sending it) holds nothing: another caller's call right after
// reaches the store; and such a refusal between two failures to reach the
// store does not end their strikes.
func TestGateHoldsNothingForACallersInput(t *testing.T) {
	g, _, obs := newTestGate(GateLimits{})
	var down bool
	store := &answering{}
	r := gatedReader{readerFunc(func(ctx context.Context, ref Ref) (Object, error) {
		switch {
		case strings.Contains(ref.Key, "/"):
			return Object{}, failure.Terminalf(failure.RemoteNameInvalid, "remote key %q cannot name a Secret", ref.Key)
		case down:
			store.calls.Add(1)
			return Object{}, fmt.Errorf("dial tcp: connection refused: %w", ErrUnavailable)
		}
		return store.GetSecret(ctx, ref)
	}), g}
	for i := range 12 {
		_, err := r.GetSecret(context.Background(), Ref{Key: fmt.Sprintf("team-a/bad-%d", i)})
		if failure.Classify(err).Reason != failure.RemoteNameInvalid {
			t.Fatalf("call %d: %v, want the caller's own RemoteNameInvalid", i, err)
		}
	}
	if until, kind := g.HeldUntil(); kind != "" {
		t.Fatalf("a dozen invalid names held the store (%s until %s)", kind, until)
	}
	if _, err := r.GetSecret(context.Background(), Ref{Key: "team-b-db"}); err != nil {
		t.Fatalf("another caller's read after them: %v", err)
	}
	if obs.refused[RefusedUnreachable] != 0 {
		t.Fatalf("the gate refused calls: %v", obs.refused)
	}

	down = true
	_, _ = r.GetSecret(context.Background(), Ref{Key: "db"})
	_, _ = r.GetSecret(context.Background(), Ref{Key: "team-a/bad"})
	_, _ = r.GetSecret(context.Background(), Ref{Key: "db"})
	if _, kind := g.HeldUntil(); kind != RefusedUnreachable {
		t.Fatalf("two failures to reach the store, an invalid name between them: hold %q, want %q", kind, RefusedUnreachable)
	}
}

// countingLeaser is a store that issues, renews and revokes leases and
// counts the calls that reached it.
type countingLeaser struct{ calls atomic.Int64 }

func (l *countingLeaser) Issue(context.Context, LeaseRequest) (Object, Lease, error) {
	l.calls.Add(1)
	return Object{}, Lease{ID: "database/creds/app/x", Duration: time.Hour, Renewable: true}, nil
}

func (l *countingLeaser) Renew(context.Context, string, time.Duration) (Lease, error) {
	l.calls.Add(1)
	return Lease{ID: "database/creds/app/x", Duration: time.Hour, Renewable: true}, nil
}

func (l *countingLeaser) Revoke(context.Context, string) error {
	l.calls.Add(1)
	return nil
}

// TestGateSpendsTheBudgetOnLeases: issuing, renewing and revoking a lease
// are calls of the store's budget like reads, so that leases due together
// cannot spend more than the store allows.
func TestGateSpendsTheBudgetOnLeases(t *testing.T) {
	g, _, obs := newTestGate(GateLimits{CallsPerMinute: 1, Burst: 3})
	l := &countingLeaser{}
	gated := g.Wrap(Ops{Reader: stubOps{}, Leaser: l}).Leaser
	ctx := context.Background()
	if _, _, err := gated.Issue(ctx, LeaseRequest{Path: "database/creds/app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gated.Renew(ctx, "database/creds/app/x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := gated.Revoke(ctx, "database/creds/app/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := gated.Renew(ctx, "database/creds/app/y", time.Hour); !errors.Is(err, ErrHeldBack) {
		t.Fatalf("a fourth lease call within a budget of three: got %v, want ErrHeldBack", err)
	}
	if l.calls.Load() != 3 || obs.sent.Load() != 3 {
		t.Fatalf("%d lease calls reached the store (%d sent), want the 3 the budget allows", l.calls.Load(), obs.sent.Load())
	}
}
