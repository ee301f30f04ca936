package externalsecret

import (
	"sort"
	"sync"
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/types"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// freshness is what this instance knows of the refreshes of every
// ExternalSecret it serves ("ns/name" to freshEntry): the last refresh it
// made, which the status does not show when nothing else changed
// (schedule.go), and what the staleness metrics need. It is in memory
// only; a controller that starts begins it anew.
type freshness struct {
	mu sync.Mutex
	m  map[string]freshEntry
}

// freshEntry is one ExternalSecret's record.
//
// Tuning: Unix times and one handle per store instead of time.Time and
// strings took the records from 20 MB to 9 MB at 100,000 (FINDINGS.md,
// "Memory"); if that stops mattering, plain times and strings will do.
type freshEntry struct {
	uid types.UID
	// refreshed is the last successful refresh this instance made (zero:
	// none yet). Times are Unix nanoseconds, zero for none: an entry is
	// kept for every ExternalSecret, so it is kept small.
	refreshed int64
	// last is the last successful refresh as the schedule counts it
	// (lastRefresh), as of the last reconcile; zero before a first sync.
	last int64
	// created is when the ExternalSecret was created: the age of one
	// never synced counts from it.
	created  int64
	interval time.Duration
	// store names the store for the metrics' labels, one copy per store.
	store unique.Handle[storeID]
}

type storeID struct{ kind, name string }

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// refreshedAt is the last refresh this instance made of the
// ExternalSecret of that key and UID, or nil.
func (f *freshness) refreshedAt(key string, uid types.UID) *time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[key]
	if !ok || e.uid != uid || e.refreshed == 0 {
		return nil
	}
	t := time.Unix(0, e.refreshed)
	return &t
}

// observe records the outcome of a reconcile: the schedule's view of the
// last refresh, and, when refreshed is set, a refresh made now.
func (f *freshness) observe(key string, es *v1alpha1.ExternalSecret, plan schedule, storeKind, store string, refreshed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]freshEntry{}
	}
	e := f.m[key]
	if e.uid != es.UID {
		e = freshEntry{uid: es.UID}
	}
	e.created = nanos(es.CreationTimestamp.Time)
	e.interval = plan.interval
	e.store = unique.Make(storeID{storeKind, store})
	if plan.lastRead != nil {
		e.last = nanos(*plan.lastRead)
	}
	if refreshed {
		e.refreshed = nanos(plan.now)
		e.last = e.refreshed
	}
	f.m[key] = e
}

// drop forgets a deleted ExternalSecret.
func (f *freshness) drop(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
}

// snapshot sums the entries by store at now: the age of the oldest
// successful refresh and the number of ExternalSecrets overdue. Only
// ExternalSecrets with a periodic refresh count; one never synced counts
// with its age since its creation.
func (f *freshness) snapshot(now time.Time) []metrics.StoreFreshness {
	f.mu.Lock()
	defer f.mu.Unlock()
	by := map[[2]string]*metrics.StoreFreshness{}
	for _, e := range f.m {
		if e.interval <= 0 {
			continue
		}
		last := e.last
		if last == 0 {
			last = e.created
		}
		id := e.store.Value()
		k := [2]string{id.kind, id.name}
		s := by[k]
		if s == nil {
			s = &metrics.StoreFreshness{StoreKind: id.kind, Store: id.name}
			by[k] = s
		}
		s.Count++
		at := time.Unix(0, last)
		s.OldestAge = max(s.OldestAge, now.Sub(at))
		if overdue(now, at, e.interval) {
			s.Overdue++
		}
	}
	out := make([]metrics.StoreFreshness, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].StoreKind != out[j].StoreKind {
			return out[i].StoreKind < out[j].StoreKind
		}
		return out[i].Store < out[j].Store
	})
	return out
}

// Freshness is the staleness of the ExternalSecrets this instance serves,
// by store, for the metrics (metrics.AddFreshnessSource).
func (r *Reconciler) Freshness() []metrics.StoreFreshness {
	return r.fresh.snapshot(r.Clock.Now())
}
