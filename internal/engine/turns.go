package engine

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/watchword-dev/watchword/internal/failure"
)

// Turn is a caller's place in line for a store's call budget when the
// budget is short: a refresh, for Key (one per ExternalSecret). A call
// with a Turn that the budget cannot serve within MaxBudgetWait keeps the
// call it reserved: it is refused with the time of that call, and when it
// comes back (at that time or later) the call is its own, already paid
// for. Later callers reserve after it. So when refreshes want more calls
// than the budget gives, they are served in the order they fell due and
// asked, each once per round of the line, none starved by callers that
// happen to ask at the moment a call frees up; the longest wait is one
// round: the callers in line times the time the budget takes per call.
//
// A call without a Turn (a write, a credential check, a batch read made
// for several callers) reserves as before, behind the line, and is
// refused when that is further than MaxBudgetWait.
type Turn struct {
	Key string
}

type turnKey struct{}

// WithTurn returns ctx carrying t, for the calls made under it.
func WithTurn(ctx context.Context, t Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

func turnFrom(ctx context.Context) (Turn, bool) {
	t, ok := ctx.Value(turnKey{}).(Turn)
	return t, ok && t.Key != ""
}

// ticket is the call a caller in line reserved: its time, and when it is
// given up if the caller has not come back (its ExternalSecret was
// deleted, or its data read by another's call).
type ticket struct {
	r      *rate.Reservation
	at     time.Time
	expire time.Time
}

// ticketGrace is how long past its time a ticket is kept, beyond the
// jitter its caller adds (up to half the wait).
const ticketGrace = 5 * time.Second

// useTicket serves a caller in line: ok and nil when its reserved call has come
// (after a sleep of up to MaxBudgetWait until it does), the refusal with
// the time left when it came back too early, and not ok when it holds
// no ticket. g.mu is held on entry and released on return.
func (g *Gate) useTicket(ctx context.Context, t Turn, now time.Time, perMinute float64) (ok bool, err error) {
	tk, ok := g.tickets[t.Key]
	if !ok {
		g.mu.Unlock()
		return false, nil
	}
	wait := tk.at.Sub(now)
	deadline, hasDeadline := ctx.Deadline()
	if wait > MaxBudgetWait || (wait > 0 && hasDeadline && deadline.Sub(now) < wait) {
		g.mu.Unlock()
		g.obs.CallRefused(RefusedBudget)
		return true, &budgetError{perMinute: perMinute, wait: wait}
	}
	delete(g.tickets, t.Key)
	g.mu.Unlock()
	if wait > 0 {
		g.obs.CallDelayed()
		if err := g.sleep(ctx, wait); err != nil {
			return true, fmt.Errorf("waiting for the store's call budget: %w: %v", failure.ErrUnavailable, err)
		}
	}
	return true, nil
}

// expireTickets gives up the tickets past their expiry. g.mu is held.
func (g *Gate) expireTickets(now time.Time) {
	for k, tk := range g.tickets {
		if now.After(tk.expire) {
			tk.r.CancelAt(now)
			delete(g.tickets, k)
		}
	}
}

// keepTicket keeps r as t's reserved call.
func (g *Gate) keepTicket(t Turn, r *rate.Reservation, now time.Time, wait time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tickets == nil {
		g.tickets = map[string]ticket{}
	}
	if old, ok := g.tickets[t.Key]; ok {
		old.r.CancelAt(now)
	}
	g.tickets[t.Key] = ticket{r: r, at: now.Add(wait), expire: now.Add(wait + wait/2 + ticketGrace)}
}

// Waiting is the number of callers in line for the budget.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tickets)
}
