package restart

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
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
	// Report: this hold is new and deserves its one event.
	Report bool
}

// pollHeld is how often a restart held for another workload's rollout
// asks again.
const pollHeld = 2 * time.Second

// Gate admits restarts one at a time across the cluster: a workload whose
// rollout is in progress waits for it; every restart waits until the
// workload restarted before it is available again; and restarts are
// spaced to at most perMinute a minute. Its time is the caller's clock.
type Gate struct {
	mu        sync.Mutex
	limiter   *rate.Limiter
	perMinute float64
	last      *Ref
	held      map[Ref]bool
}

// NewGate limits restarts to perMinute a minute, spaced evenly; zero or
// less means no limit.
func NewGate(perMinute float64) *Gate {
	limit := rate.Inf
	if perMinute > 0 {
		limit = rate.Limit(perMinute / 60)
	}
	return &Gate{limiter: rate.NewLimiter(limit, 1), perMinute: perMinute, held: map[Ref]bool{}}
}

// Admit tells whether ref, whose due restart is asked for at now, goes
// ahead. rollingOut tells whether its own previous rollout is unfinished;
// available whether another workload has finished its rollout (false
// when it cannot be told). A restart that goes ahead takes its place in
// the rate and becomes the one the next restart waits for.
func (g *Gate) Admit(now time.Time, ref Ref, rollingOut bool, available func(Ref) bool) Verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.judge(now, ref, rollingOut, available)
	if v.Go {
		delete(g.held, ref)
		last := ref
		g.last = &last
		return v
	}
	v.Report = !g.held[ref]
	g.held[ref] = true
	return v
}

func (g *Gate) judge(now time.Time, ref Ref, rollingOut bool, available func(Ref) bool) Verdict {
	if rollingOut {
		return Verdict{Reason: HeldRollout, RetryAfter: pollHeld,
			Message: fmt.Sprintf("the restart waits until the previous rollout of %s has finished", ref)}
	}
	if g.last != nil && *g.last != ref && !available(*g.last) {
		return Verdict{Reason: HeldPrevious, RetryAfter: pollHeld,
			Message: fmt.Sprintf("the restart waits until %s, restarted before it, is available again", *g.last)}
	}
	r := g.limiter.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Verdict{Reason: HeldRate, RetryAfter: d,
			Message: fmt.Sprintf("the restart waits %s: at most %g restarts a minute across the cluster (--restart-rate)", d.Round(time.Second), g.perMinute)}
	}
	return Verdict{Go: true}
}

// Settled tells the gate that ref owes no due restart any more (it was
// made, or is no longer owed): a later hold is a new one.
func (g *Gate) Settled(ref Ref) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, ref)
}

// Forget drops what the gate remembers of a workload that is gone.
func (g *Gate) Forget(ref Ref) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, ref)
	if g.last != nil && *g.last == ref {
		g.last = nil
	}
}
