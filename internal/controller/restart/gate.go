package restart

import (
	"fmt"
	"sync"
	"time"
)

// Ref names a workload.
type Ref struct{ Kind, Namespace, Name string }

func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Why a due restart is held back.
const (
	// HeldRollout: the workload's previous rollout has not finished.
	HeldRollout = "RolloutInProgress"
	// HeldPrevious: the workload restarted last is not available again.
	HeldPrevious = "PreviousRestartNotAvailable"
	// HeldRate: the restart rate is spent.
	HeldRate = "RateLimited"
	// HeldWindow: the workload's maintenance window is closed.
	HeldWindow = "MaintenanceWindow"
	// HeldInvalidWindow: the workload's maintenance window does not
	// parse.
	HeldInvalidWindow = "InvalidWindow"
)

// Verdict is whether a due restart goes ahead now.
type Verdict struct {
	Go bool
	// Reason and Message say why it is held; RetryAfter when to ask
	// again (a change of the workload asks sooner).
	Reason     string
	Message    string
	RetryAfter time.Duration
	// Behind names what the restart waits behind when that can change
	// while the reason stays (the workload restarted before it, for
	// HeldPrevious): a spell of a hold lasts while its reason and Behind
	// stay the same (held.go).
	Behind string
}

// pollHeld is how often a restart held for a rollout asks again. It is
// the fallback: a change of a cached (labelled) workload wakes the
// restarts that wait for it at once (Observed); a workload that only an
// ExternalSecret lists is not watched, and is asked about this often.
const pollHeld = 5 * time.Second

// Gate admits restarts one at a time across the cluster: a workload whose
// rollout is in progress waits for it; restarts keep to the rate; and
// every restart waits until the workload restarted before it is
// available again. Its time is the caller's clock. It tells why a
// restart is held; whether a hold is worth an event is for held.go.
type Gate struct {
	mu   sync.Mutex
	rate Rate
	// admitted is when the last restart was admitted.
	admitted time.Time
	last     *Ref
	// lastGen is the generation last's restart gave it, restartInFlight
	// while its patch is under way, 0 when no restart was made: a version
	// of last older than lastGen (a cache behind Watchword's own write)
	// still shows the rollout before the restart, finished.
	lastGen int64
	// lastAvailable: last has been seen available since its restart.
	lastAvailable bool
	// held are the restarts held now, to be woken when last is
	// available again.
	held map[Ref]bool
}

// restartInFlight is lastGen while the admitted restart's patch is under
// way.
const restartInFlight = -1

// NewGate limits restarts to the rate; a zero rate means no limit.
func NewGate(rate Rate) *Gate {
	return &Gate{rate: rate, held: map[Ref]bool{}}
}

// Admit tells whether ref, whose due restart is asked for at now, goes
// ahead. rollingOut tells whether its own previous rollout is unfinished;
// available whether another workload, at generation minGen or later, has
// finished its rollout (false when it cannot be told). A restart that
// goes ahead takes its place in the rate and becomes the one the next
// restart waits for; the caller reports its patch with Restarted.
func (g *Gate) Admit(now time.Time, ref Ref, rollingOut bool, available func(ref Ref, minGen int64) bool) Verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.judge(now, ref, rollingOut, available)
	if v.Go {
		delete(g.held, ref)
		last := ref
		g.last, g.lastGen, g.lastAvailable = &last, restartInFlight, false
		return v
	}
	g.held[ref] = true
	return v
}

// judge tells why ref's restart is held, if it is. The rate comes before
// the previous restart: a restart the rate holds waits that long whatever
// the previous one does, and the previous restart is always still in
// progress just after it was admitted (its patch under way, then until
// its controller has seen it, even with no replicas), so judged first it
// would name nearly every rate hold after it. What the rate holds is
// named as the rate, with its wait; a restart held once the rate allows
// it waits for the previous restart alone.
func (g *Gate) judge(now time.Time, ref Ref, rollingOut bool, available func(Ref, int64) bool) Verdict {
	if rollingOut {
		return Verdict{Reason: HeldRollout, RetryAfter: pollHeld,
			Message: fmt.Sprintf("the restart waits until the previous rollout of %s has finished", ref)}
	}
	if d := g.rateWait(now); d > 0 {
		return Verdict{Reason: HeldRate, RetryAfter: d,
			Message: fmt.Sprintf("the restart waits %s: at most %s across the cluster, spaced evenly (--restart-rate %s)", waitText(d), g.rate.Text(), g.rate)}
	}
	if g.last != nil && *g.last != ref && (g.lastGen == restartInFlight || !available(*g.last, g.lastGen)) {
		return Verdict{Reason: HeldPrevious, RetryAfter: pollHeld, Behind: g.last.String(),
			Message: fmt.Sprintf("the restart waits until %s, restarted before it, is available again", *g.last)}
	}
	g.admitted = now
	return Verdict{Go: true}
}

// waitText is a wait in whole seconds, or in milliseconds under a second
// (a rate of several restarts a second), never "0s".
func waitText(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return max(d.Round(time.Millisecond), time.Millisecond).String()
}

// rateWait is how long a restart asked for at now waits for the rate:
// restarts are admitted at least one interval (window/count) apart, so no
// window holds more than count of them. A time earlier than the last
// admitted one (callers read the clock before they take the lock, so
// times can arrive out of order) waits for the interval after it, never
// fills a gap before it: the admitted times only grow.
//
// Written here rather than with golang.org/x/time/rate: its Limiter works
// in fractional tokens, so even spacing comes out a few nanoseconds short
// of the interval, and a time before its last one moves its clock back,
// which lets one restart too many into a window.
func (g *Gate) rateWait(now time.Time) time.Duration {
	if g.rate.Unlimited() || g.admitted.IsZero() {
		return 0
	}
	return max(g.admitted.Add(g.rate.Interval()).Sub(now), 0)
}

// Restarted tells the gate that the restart it admitted for ref was
// written and gave it generation gen; 0 when the write failed, and ref is
// as the API server last said.
func (g *Gate) Restarted(ref Ref, gen int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last != nil && *g.last == ref {
		g.lastGen = gen
	}
}

// Settled tells the gate that ref owes no due restart any more (it was
// made, or is not due yet): it waits for nothing to be woken for.
func (g *Gate) Settled(ref Ref) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, ref)
}

// Observed tells the gate whether ref's rollout has finished, as its
// version of generation gen says. When ref is the workload restarted last
// and has just become available again, it returns the held restarts,
// which may go now: their reconciles need not wait for their next poll.
func (g *Gate) Observed(ref Ref, gen int64, available bool) []Ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil || *g.last != ref {
		return nil
	}
	if g.lastGen == restartInFlight || gen < g.lastGen {
		// A version from before the restart says nothing of its rollout.
		available = false
	}
	if available == g.lastAvailable {
		return nil
	}
	g.lastAvailable = available
	if !available {
		return nil
	}
	return g.waiting()
}

// Forget drops what the gate remembers of a workload that is gone, and
// returns the held restarts when it was the one restarted last.
func (g *Gate) Forget(ref Ref) []Ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, ref)
	if g.last == nil || *g.last != ref {
		return nil
	}
	g.last = nil
	return g.waiting()
}

func (g *Gate) waiting() []Ref {
	out := make([]Ref, 0, len(g.held))
	for r := range g.held {
		out = append(out, r)
	}
	return out
}
