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

// ticket is a call a caller in line reserved: its time, and when it is
// given up if the caller has not come back (its ExternalSecret was
// deleted, or its data read by another's call). Tickets are kept by the
// caller's key and the keys of its call, so that each call of a sync that
// the budget turned away (the reads of several keys, a listing) keeps its
// own; one call refused again and again holds up to maxTickets, used in
// the order of their times. r is nil for a call already paid for and given back (the
// call was not sent: no free slot, or a hold).
type ticket struct {
	r      *rate.Reservation
	at     time.Time
	expire time.Time
}

// ticketGrace is how long past its time a ticket is kept, beyond the
// jitter its caller adds (up to half the wait).
const ticketGrace = 5 * time.Second

// maxTickets bounds the tickets of one caller: a sync makes few calls,
// and a caller that keeps more would hold the line for others.
const maxTickets = 16

// useTicket serves a caller in line with its earliest ticket: ok and nil
// when that reserved call has come (after a sleep of up to MaxBudgetWait
// until it does), the refusal with the time left when it came back too
// early, and not ok when it holds no ticket. g.mu is held on entry and
// released on return.
func (g *Gate) useTicket(ctx context.Context, t Turn, now time.Time, perMinute float64) (ok bool, err error) {
	line := g.tickets[t.Key]
	if len(line) == 0 {
		g.mu.Unlock()
		return false, nil
	}
	tk := line[0]
	wait := tk.at.Sub(now)
	deadline, hasDeadline := ctx.Deadline()
	if wait > MaxBudgetWait || (wait > 0 && hasDeadline && deadline.Sub(now) < wait) {
		g.mu.Unlock()
		g.obs.CallRefused(RefusedBudget)
		return true, &budgetError{perMinute: perMinute, wait: wait}
	}
	if len(line) == 1 {
		delete(g.tickets, t.Key)
	} else {
		g.tickets[t.Key] = line[1:]
	}
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
	for k, line := range g.tickets {
		kept := line[:0]
		for _, tk := range line {
			if now.After(tk.expire) {
				if tk.r != nil {
					tk.r.CancelAt(now)
				}
				continue
			}
			kept = append(kept, tk)
		}
		if len(kept) == 0 {
			delete(g.tickets, k)
		} else {
			g.tickets[k] = kept
		}
	}
}

// keepTicket keeps r as one of t's reserved calls, at now+wait; a nil r
// is a call already paid for, given back.
func (g *Gate) keepTicket(t Turn, r *rate.Reservation, now time.Time, wait time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tickets == nil {
		g.tickets = map[string][]ticket{}
	}
	line := g.tickets[t.Key]
	if len(line) >= maxTickets {
		// The latest one goes: the budget gets its call back.
		if last := line[len(line)-1]; last.r != nil {
			last.r.CancelAt(now)
		}
		line = line[:len(line)-1]
	}
	tk := ticket{r: r, at: now.Add(wait), expire: now.Add(wait + wait/2 + ticketGrace)}
	i := len(line)
	for i > 0 && line[i-1].at.After(tk.at) {
		i--
	}
	g.tickets[t.Key] = append(line[:i], append([]ticket{tk}, line[i:]...)...)
}

// Waiting is the number of calls reserved by callers in line.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, line := range g.tickets {
		n += len(line)
	}
	return n
}
