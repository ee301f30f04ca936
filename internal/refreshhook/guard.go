package refreshhook

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// guard remembers the signatures accepted within the window, to refuse
// their replays, and limits the notifications accepted per store and in
// all, so that a sender (or someone who captured its requests) cannot
// make the controller read a store over and over. Only notifications that
// proved their sender reach it.
type guard struct {
	mu sync.Mutex
	// seen maps an accepted signature to the last time its timestamp is
	// within the window; after it, CheckTimestamp refuses it anyway.
	seen   map[[sha256.Size]byte]time.Time
	stores map[string]*rate.Limiter
	all    *rate.Limiter
	// swept is when seen and stores were last rid of what is over.
	swept time.Time
}

// sweepEvery is how often expired signatures and idle limiters are
// dropped: their number is bounded anyway, this keeps it low.
const sweepEvery = 10 * time.Second

// admit accepts one notification for store, signed with sum (zero for
// a credential that is the same in every request: a bearer token, or a
// legacy signature, which are not remembered) and expiring at expires. It
// returns release, which undoes the admission when nothing was done after
// all, so that the sender may send the same request again.
func (g *guard) admit(sum [sha256.Size]byte, expires time.Time, store string, now time.Time, o Options) (release func(), ref *refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	remember := sum != [sha256.Size]byte{}
	if g.seen == nil {
		g.seen = map[[sha256.Size]byte]time.Time{}
	}
	if g.stores == nil {
		g.stores = map[string]*rate.Limiter{}
	}
	if g.all == nil {
		g.all = rate.NewLimiter(rate.Limit(o.Rate), burst(o.Rate))
	}
	if now.Sub(g.swept) >= sweepEvery || (remember && len(g.seen) >= MaxRemembered) {
		g.sweep(now)
	}
	if remember {
		if until, ok := g.seen[sum]; ok && !now.After(until) {
			return nil, &refusal{status: http.StatusConflict, message: "this notification was accepted already: sign each one with the time it is sent", reason: "replayed"}
		}
		if len(g.seen) >= MaxRemembered {
			// Forgetting a signature still in the window would let its
			// replay in: refuse new ones until old ones leave it.
			return nil, &refusal{status: http.StatusServiceUnavailable, message: "too many notifications; try again later", reason: "replay memory full"}
		}
	}
	sl := g.stores[store]
	if sl == nil {
		sl = rate.NewLimiter(rate.Limit(o.StoreRate), burst(o.StoreRate))
		g.stores[store] = sl
	}
	rs := sl.ReserveN(now, 1)
	if d := rs.DelayFrom(now); d > 0 {
		rs.CancelAt(now)
		return nil, tooMany("too many notifications for this store; try again later", "rate limited: store", d)
	}
	ra := g.all.ReserveN(now, 1)
	if d := ra.DelayFrom(now); d > 0 {
		ra.CancelAt(now)
		rs.CancelAt(now)
		return nil, tooMany("too many notifications; try again later", "rate limited: all stores", d)
	}
	if remember {
		g.seen[sum] = expires
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if remember {
			delete(g.seen, sum)
		}
		ra.CancelAt(now)
		rs.CancelAt(now)
	}, nil
}

// sweep drops the signatures out of the window and the limiters of stores
// that have been quiet long enough to be full again (a new one is the
// same).
func (g *guard) sweep(now time.Time) {
	g.swept = now
	for sum, until := range g.seen {
		if now.After(until) {
			delete(g.seen, sum)
		}
	}
	for store, l := range g.stores {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(g.stores, store)
		}
	}
}

// tooMany is a 429 that tells when to try again, in whole seconds.
func tooMany(message, reason string, wait time.Duration) *refusal {
	return &refusal{status: http.StatusTooManyRequests, message: message, reason: reason,
		retryAfter: fmt.Sprint(int64(math.Ceil(wait.Seconds())))}
}

// storeKey names a store in the limiters.
func storeKey(s StoreRef) string {
	return s.Kind + "/" + s.Namespace + "/" + s.Name
}
