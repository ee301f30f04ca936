package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/watchword-dev/watchword/internal/failure"
)

// GateLimits are the call limits of one store.
type GateLimits struct {
	// CallsPerMinute is the store's call budget: the rate at which calls
	// may start, with Burst of them at once after a quiet spell. Zero or
	// less: no budget.
	CallsPerMinute float64
	// Burst is the number of calls the budget allows at once; at least 1
	// when there is a budget.
	Burst int
	// MaxConcurrent bounds the calls in flight at once. Zero or less: no
	// bound.
	MaxConcurrent int
}

// The holds of a gate, and the longest a call waits for its turn in the
// budget before it is refused instead.
const (
	// AuthHoldFirst is the hold after a first refusal of the credentials;
	// each refusal in a row doubles it, up to AuthHoldMax.
	AuthHoldFirst = time.Minute
	AuthHoldMax   = 15 * time.Minute
	// ThrottleHoldFirst is the hold after a throttling answer that did not
	// say how long to wait; each one in a row doubles it, up to
	// ThrottleHoldMax. A Retry-After is honoured as given, up to
	// AuthHoldMax.
	ThrottleHoldFirst = 2 * time.Second
	ThrottleHoldMax   = time.Minute
	// UnreachableHoldFirst is the hold after a second call in a row that
	// found the store unreachable (a first one may be a blip); each one
	// after it doubles the hold, up to UnreachableHoldMax. Short, so that
	// a store that comes back is used again within half a minute.
	UnreachableHoldFirst = time.Second
	UnreachableHoldMax   = 30 * time.Second
	// SlotWait is the longest a call waits for a free call slot (of
	// MaxConcurrent); then it is refused with ErrHeldBack, so that the
	// workers of a slow store do not wait on it and other stores are
	// served. BusyRetry is when such a call asks to be tried again.
	SlotWait  = 100 * time.Millisecond
	BusyRetry = time.Second
	// MaxBudgetWait is the longest a call waits for the budget; a call
	// that would wait longer is refused with ErrThrottled and the time to
	// wait, so that a worker is not held for long.
	MaxBudgetWait = 2 * time.Second
)

// The causes of a refusal by a gate, as GateObserver.CallRefused is told.
const (
	RefusedBudget          = "budget"
	RefusedUnauthenticated = "unauthenticated"
	RefusedThrottled       = "throttled"
	RefusedBusy            = "busy"
	RefusedUnreachable     = "unreachable"
)

// ErrHeldBack is the error of a call that the store's own call limits
// held back: every call slot was taken (maxConcurrentCalls) or the call
// budget was spent. The call was not sent, and its error says when to try
// again (failure.RetryAfter). It is of class ErrThrottled. A caller that
// can simply try again later does so without reporting a failure: nothing
// failed, the data it holds is as good as it was.
var ErrHeldBack = fmt.Errorf("held back by the store's call limits: %w", failure.ErrThrottled)

type busyError struct{ limit int }

func (e *busyError) Error() string {
	return fmt.Sprintf("the store has %d calls in flight, its limit (maxConcurrentCalls): %v", e.limit, ErrHeldBack)
}
func (e *busyError) Unwrap() error             { return ErrHeldBack }
func (e *busyError) RetryAfter() time.Duration { return BusyRetry }

type budgetError struct {
	perMinute float64
	wait      time.Duration
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("the store's call budget (%s calls per minute) is spent: %v", trimFloat(e.perMinute), ErrHeldBack)
}
func (e *budgetError) Unwrap() error             { return ErrHeldBack }
func (e *budgetError) RetryAfter() time.Duration { return e.wait }

// GateObserver is told of what a gate does with each call: sent to the
// store, delayed for the budget (then sent), or refused without reaching
// the store, with the cause (RefusedBudget, RefusedUnauthenticated,
// RefusedThrottled, RefusedBusy).
type GateObserver interface {
	CallSent()
	CallDelayed()
	CallRefused(cause string)
}

// Gate is the one door of a store through which every call passes (reads,
// version checks, batch reads, writes, deletes, credential checks): it
// keeps the store's call budget, bounds its calls in flight, and holds the
// store after it refused the credentials (minutes, doubling), asked to
// slow down (its Retry-After), or could not be reached twice in a row
// (seconds, doubling): a store that is down is asked by one call now and
// then, not by every ExternalSecret on its own backoff. A gate lives as long as its store, across
// the clients built for it; ResetAuth ends a credentials hold when the
// credentials change, and ResetUnreachable an unreachable hold when the
// connection to the store changes.
type Gate struct {
	clock Clock
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	obs   GateObserver

	mu     sync.Mutex
	limits GateLimits
	budget *rate.Limiter // nil: no budget
	slots  chan struct{} // nil: no bound
	// holdUntil is when calls may reach the store again, after holdCause.
	holdUntil time.Time
	holdCause error
	holdKind  string
	// holdText is holdCause's text without the keys of its call.
	holdText string
	// authStrikes, throttleStrikes and unreachableStrikes count
	// refusals and failures to reach the store in a row.
	authStrikes        int
	throttleStrikes    int
	unreachableStrikes int
	// tickets are the calls reserved by callers in line, by their
	// Turn's key (turns.go).
	tickets map[string][]ticket
	// credentials counts ResetAuth calls: a refusal of a call that began
	// before the last one was made with credentials since replaced, and
	// holds nothing.
	credentials uint64
}

// NewGate returns a gate with limits. A nil clock is the wall clock, a nil
// observer is told nothing.
func NewGate(limits GateLimits, clock Clock, obs GateObserver) *Gate {
	if clock == nil {
		clock = RealClock
	}
	if obs == nil {
		obs = noObserver{}
	}
	g := &Gate{clock: clock, sleep: sleepCtx, obs: obs}
	g.SetLimits(limits)
	return g
}

// SetLimits changes the limits; calls already in flight keep the slot they
// hold.
func (g *Gate) SetLimits(l GateLimits) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l == g.limits && (g.budget != nil) == (l.CallsPerMinute > 0) && (g.slots != nil) == (l.MaxConcurrent > 0) {
		return
	}
	if l.CallsPerMinute > 0 {
		burst := max(l.Burst, 1)
		limit := rate.Limit(l.CallsPerMinute / 60)
		if g.budget == nil {
			g.budget = rate.NewLimiter(limit, burst)
		} else {
			now := g.clock.Now()
			g.budget.SetLimitAt(now, limit)
			g.budget.SetBurstAt(now, burst)
		}
	} else {
		g.budget = nil
	}
	if l.MaxConcurrent != g.limits.MaxConcurrent || (g.slots == nil) != (l.MaxConcurrent <= 0) {
		g.slots = nil
		if l.MaxConcurrent > 0 {
			g.slots = make(chan struct{}, l.MaxConcurrent)
		}
	}
	g.limits = l
}

// Limits are the gate's limits.
func (g *Gate) Limits() GateLimits {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limits
}

// ResetAuth ends a hold after refused credentials and forgets the
// refusals: the credentials changed, and the new ones are tried at once.
func (g *Gate) ResetAuth() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.authStrikes = 0
	g.credentials++
	if g.holdKind == RefusedUnauthenticated {
		g.holdUntil, g.holdCause, g.holdKind, g.holdText = time.Time{}, nil, "", ""
	}
}

// ResetUnreachable ends a hold after the store could not be reached and
// forgets the failures: the connection to the store changed (a plugin
// came back), and the store is tried again at once. Should the store still
// be unreachable, the next failures hold it again.
func (g *Gate) ResetUnreachable() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unreachableStrikes = 0
	if g.holdKind == RefusedUnreachable {
		g.holdUntil, g.holdCause, g.holdKind, g.holdText = time.Time{}, nil, "", ""
	}
}

// HeldUntil tells until when the store is held, and why
// (RefusedUnauthenticated, RefusedThrottled or RefusedUnreachable); zero
// when it is not.
func (g *Gate) HeldUntil() (time.Time, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.clock.Now().Before(g.holdUntil) {
		return time.Time{}, ""
	}
	return g.holdUntil, g.holdKind
}

// HeldError is the error of a call that a gate refused: the store is held
// after Cause until Until. It has Cause's class, and asks to retry when
// the hold ends. Its text says what the store did (Kind) and Detail,
// Cause's text without the keys of the call that failed: that was another
// caller's call, and a ClusterSecretStore serves many namespaces.
type HeldError struct {
	Cause error
	Until time.Time
	// Kind is why the store is held: RefusedUnauthenticated,
	// RefusedThrottled or RefusedUnreachable.
	Kind string
	// Detail is Cause's text with the failed call's keys left out.
	Detail string
	// wait is how long the hold had left when the call was refused.
	wait time.Duration
}

func (e *HeldError) Error() string {
	what := map[string]string{
		RefusedUnauthenticated: "the store refused the credentials",
		RefusedThrottled:       "the store asked to slow down",
		RefusedUnreachable:     "the store could not be reached",
	}[e.Kind]
	if what == "" {
		what = "the store is held"
	}
	return fmt.Sprintf("%s (%s); no call is sent to the store until %s", what, e.Detail, e.Until.UTC().Format(time.TimeOnly+" MST"))
}

// Unwrap returns the cause.
func (e *HeldError) Unwrap() error { return e.Cause }

// RetryAfter is the time left of the hold.
func (e *HeldError) RetryAfter() time.Duration { return e.wait }

// do runs one call, about keys, through the gate: the hold, then the
// budget, then a call slot. The budget comes before the slot so that a
// call waiting for the budget (up to MaxBudgetWait) holds no slot: were
// it the other way round, calls sleeping for the budget would fill the
// slots, and the callers refused as busy would retry at random, past the
// line of the budget's turns (turns.go).
func (g *Gate) do(ctx context.Context, keys []string, call func(context.Context) error) error {
	if err := g.held(); err != nil {
		return err
	}
	giveBack, err := g.spend(ctx, keys)
	if err != nil {
		return err
	}
	slots := g.slotsNow()
	if slots != nil {
		t := time.NewTimer(SlotWait)
		select {
		case slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			giveBack()
			g.obs.CallRefused(RefusedBusy)
			return &busyError{limit: cap(slots)}
		case <-ctx.Done():
			t.Stop()
			giveBack()
			return fmt.Errorf("waiting for a free call slot of the store: %w: %v", failure.ErrUnavailable, ctx.Err())
		}
		defer func() { <-slots }()
	}
	// The hold may have started while this call waited.
	if err = g.held(); err != nil {
		giveBack()
		return err
	}
	g.obs.CallSent()
	g.mu.Lock()
	creds := g.credentials
	g.mu.Unlock()
	err = call(ctx)
	g.record(err, keys, creds)
	return err
}

func (g *Gate) slotsNow() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slots
}

// held returns a HeldError while the store is held.
func (g *Gate) held() error {
	g.mu.Lock()
	now := g.clock.Now()
	if !now.Before(g.holdUntil) {
		g.mu.Unlock()
		return nil
	}
	kind := g.holdKind
	err := &HeldError{Cause: g.holdCause, Until: g.holdUntil, Kind: kind, Detail: g.holdText, wait: g.holdUntil.Sub(now)}
	g.mu.Unlock()
	g.obs.CallRefused(kind)
	return err
}

// spend takes one call from the budget, waiting for it up to
// MaxBudgetWait (and ctx's deadline). A call with a Turn keeps the call
// it reserved when it is refused, and uses it when it comes back
// (turns.go), one per key it calls about. giveBack returns the call taken, for a call that is then
// not sent (no free slot, a hold): to the caller's line as a ticket due
// now for a call with a Turn, so that it does not lose its turn, or to
// the budget otherwise.
func (g *Gate) spend(ctx context.Context, keys []string) (giveBack func(), err error) {
	nothing := func() {}
	g.mu.Lock()
	budget, perMinute := g.budget, g.limits.CallsPerMinute
	if budget == nil {
		g.tickets = nil
		g.mu.Unlock()
		return nothing, nil
	}
	now := g.clock.Now()
	g.expireTickets(now)
	t, hasTurn := turnFrom(ctx)
	if hasTurn {
		// One place in line per call of the caller's sync: each key it
		// reads (or a listing) keeps its own reserved call, and coming
		// back for the same call finds it.
		t.Key += "\x00" + strings.Join(keys, "\x00")
	}
	back := func(r *rate.Reservation) func() {
		return func() {
			at := g.clock.Now()
			switch {
			case hasTurn:
				g.keepTicket(t, nil, at, 0)
			case r != nil:
				r.CancelAt(at)
			}
		}
	}
	if hasTurn {
		if ok, terr := g.useTicket(ctx, t, now, perMinute); ok {
			if terr != nil {
				return nothing, terr
			}
			return back(nil), nil
		}
	} else {
		g.mu.Unlock()
	}
	r := budget.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait == 0 {
		return back(r), nil
	}
	deadline, hasDeadline := ctx.Deadline()
	if !r.OK() || wait > MaxBudgetWait || (hasDeadline && deadline.Sub(now) < wait) {
		g.obs.CallRefused(RefusedBudget)
		switch {
		case !r.OK() || wait == rate.InfDuration:
			r.CancelAt(now)
			wait = time.Minute
		case hasTurn:
			g.keepTicket(t, r, now, wait)
		default:
			r.CancelAt(now)
		}
		return nothing, &budgetError{perMinute: perMinute, wait: wait}
	}
	g.obs.CallDelayed()
	if err := g.sleep(ctx, wait); err != nil {
		r.CancelAt(g.clock.Now())
		return nothing, fmt.Errorf("waiting for the store's call budget: %w: %v", failure.ErrUnavailable, err)
	}
	return back(r), nil
}

// record starts a hold after a refusal of the credentials, a throttling
// answer or a second failure in a row to reach the store, and ends the
// strikes after a call the store answered. An error about the caller's
// input (failure.CallersInput: a remote name refused before it was sent)
// is the caller's alone: it neither holds the store for every other
// caller nor ends the strikes. creds is the count of ResetAuth calls when
// the call began: a refusal of credentials replaced while the call was
// under way (a slow login with the old password, say) does not hold the
// new ones.
func (g *Gate) record(err error, keys []string, creds uint64) {
	if failure.CallersInput(err) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if err == nil || !errors.Is(err, ErrUnavailable) {
		g.unreachableStrikes = 0
	}
	switch {
	case err == nil:
		g.authStrikes, g.throttleStrikes = 0, 0
	case errors.Is(err, ErrUnavailable):
		g.unreachableStrikes++
		if g.unreachableStrikes > 1 {
			g.startHold(now, doubled(UnreachableHoldFirst, g.unreachableStrikes-1, UnreachableHoldMax), err, keys, RefusedUnreachable)
		}
	case errors.Is(err, ErrUnauthenticated):
		if creds != g.credentials {
			return
		}
		g.authStrikes++
		g.startHold(now, doubled(AuthHoldFirst, g.authStrikes, AuthHoldMax), err, keys, RefusedUnauthenticated)
	case errors.Is(err, ErrThrottled):
		g.throttleStrikes++
		d, ok := failure.RetryAfter(err)
		if ok {
			d = min(d, AuthHoldMax)
		} else {
			d = doubled(ThrottleHoldFirst, g.throttleStrikes, ThrottleHoldMax)
		}
		g.startHold(now, d, err, keys, RefusedThrottled)
	default:
		// Another answer of the store (not found, a denial of one
		// request): it took the credentials.
		g.authStrikes = 0
	}
}

// startHold holds the store until now+d, unless a longer hold is on.
func (g *Gate) startHold(now time.Time, d time.Duration, cause error, keys []string, kind string) {
	if until := now.Add(d); until.After(g.holdUntil) {
		text := withoutKeys(cause.Error(), keys)
		if slices.Contains(keys, listing) {
			// A listing's error names its prefix and the keys it met,
			// which are not known here to be left out: the hold, told to
			// every caller of the store (of every namespace, through a
			// ClusterSecretStore), says only what failed.
			text = "a listing of the store's keys failed"
		}
		g.holdUntil, g.holdCause, g.holdKind, g.holdText = until, cause, kind, text
	}
}

// listing stands for the keys of a listing in a call's keys.
const listing = "\x00listing"

// withoutKeys is text with each key, quoted or bare, shown as "…". A bare
// key shorter than three characters is left: it would cut up the words
// around it.
func withoutKeys(text string, keys []string) string {
	for _, k := range keys {
		if k == "" {
			continue
		}
		text = strings.ReplaceAll(text, strconv.Quote(k), `"…"`)
		if len(k) >= 3 {
			text = strings.ReplaceAll(text, k, "…")
		}
	}
	return text
}

// doubled is first doubled for each strike after the first, up to most.
func doubled(first time.Duration, strikes int, most time.Duration) time.Duration {
	d := first
	for i := 1; i < strikes && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type noObserver struct{}

func (noObserver) CallSent()          {}
func (noObserver) CallDelayed()       {}
func (noObserver) CallRefused(string) {}

// Wrap returns ops whose every call to the store passes through the gate:
// for Client.Wrap. Lease calls (issue, renew, revoke) spend the budget
// like reads: a thousand renewals due together wait their turn rather than
// crowd out every read. The change feed (Watcher) is one long call made by the
// feed's own loop with its own backoff, and is left as it is.
func (g *Gate) Wrap(ops Ops) Ops {
	out := Ops{Reader: gatedReader{ops.Reader, g}}
	if ops.Batch != nil {
		out.Batch = gatedBatch{ops.Batch, g}
	}
	if ops.Versions != nil {
		out.Versions = gatedVersions{ops.Versions, g}
	}
	if ops.Lister != nil {
		out.Lister = gatedLister{ops.Lister, g}
	}
	if ops.Metadata != nil {
		out.Metadata = gatedMetadata{ops.Metadata, g}
	}
	if ops.Writer != nil {
		out.Writer = gatedWriter{ops.Writer, g}
	}
	if ops.Checker != nil {
		out.Checker = gatedChecker{ops.Checker, g}
	}
	if ops.Leaser != nil {
		out.Leaser = gatedLeaser{ops.Leaser, g}
	}
	return out
}

// gatedLister spends one call of the budget per page: a listing of many
// pages is as many calls to the store.
type gatedLister struct {
	inner Lister
	g     *Gate
}

func (l gatedLister) List(ctx context.Context, req ListRequest) (page ListPage, err error) {
	err = l.g.do(ctx, []string{listing}, func(ctx context.Context) error {
		page, err = l.inner.List(ctx, req)
		return err
	})
	return page, err
}

type gatedReader struct {
	inner Reader
	g     *Gate
}

func (r gatedReader) GetSecret(ctx context.Context, ref Ref) (obj Object, err error) {
	err = r.g.do(ctx, []string{ref.Key}, func(ctx context.Context) error {
		obj, err = r.inner.GetSecret(ctx, ref)
		return err
	})
	return obj, err
}

type gatedMetadata struct {
	inner MetadataReader
	g     *Gate
}

func (r gatedMetadata) GetMetadata(ctx context.Context, ref Ref) (obj Object, err error) {
	err = r.g.do(ctx, []string{ref.Key}, func(ctx context.Context) error {
		obj, err = r.inner.GetMetadata(ctx, ref)
		return err
	})
	return obj, err
}

type gatedBatch struct {
	inner BatchReader
	g     *Gate
}

func (b gatedBatch) GetSecrets(ctx context.Context, refs []Ref) (items []BatchItem, err error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.Key
	}
	err = b.g.do(ctx, keys, func(ctx context.Context) error {
		items, err = b.inner.GetSecrets(ctx, refs)
		return err
	})
	return items, err
}

type gatedVersions struct {
	inner VersionReader
	g     *Gate
}

func (v gatedVersions) CurrentVersion(ctx context.Context, key string) (ver string, err error) {
	err = v.g.do(ctx, []string{key}, func(ctx context.Context) error {
		ver, err = v.inner.CurrentVersion(ctx, key)
		return err
	})
	return ver, err
}

type gatedWriter struct {
	inner Writer
	g     *Gate
}

func (w gatedWriter) PutSecret(ctx context.Context, key string, p Publication, owner Owner) (ver string, err error) {
	err = w.g.do(ctx, []string{key}, func(ctx context.Context) error {
		ver, err = w.inner.PutSecret(ctx, key, p, owner)
		return err
	})
	return ver, err
}

func (w gatedWriter) DeleteSecret(ctx context.Context, key string, owner Owner) error {
	return w.g.do(ctx, []string{key}, func(ctx context.Context) error { return w.inner.DeleteSecret(ctx, key, owner) })
}

// gatedLeaser passes lease calls through the gate. A held-back renewal is
// tried again when the budget allows; a lease is renewed well before its
// end (engine.NextLeaseAction), so a short wait costs nothing.
type gatedLeaser struct {
	inner Leaser
	g     *Gate
}

func (l gatedLeaser) Issue(ctx context.Context, req LeaseRequest) (obj Object, lease Lease, err error) {
	err = l.g.do(ctx, []string{req.Path}, func(ctx context.Context) error {
		obj, lease, err = l.inner.Issue(ctx, req)
		return err
	})
	return obj, lease, err
}

func (l gatedLeaser) Renew(ctx context.Context, id string, increment time.Duration) (lease Lease, err error) {
	err = l.g.do(ctx, []string{id}, func(ctx context.Context) error {
		lease, err = l.inner.Renew(ctx, id, increment)
		return err
	})
	return lease, err
}

func (l gatedLeaser) Revoke(ctx context.Context, id string) error {
	return l.g.do(ctx, []string{id}, func(ctx context.Context) error { return l.inner.Revoke(ctx, id) })
}

type gatedChecker struct {
	inner Checker
	g     *Gate
}

func (c gatedChecker) Check(ctx context.Context) error {
	return c.g.do(ctx, nil, c.inner.Check)
}

// ThrottledFor returns an error of class ErrThrottled that asks to wait d
// before the next call (a store's Retry-After): the gate holds the store
// that long. msg names what was asked, never a value.
func ThrottledFor(d time.Duration, msg string) error { return failure.ThrottledFor(d, msg) }
