package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/watchword-dev/watchword/internal/engine"
)

// The lease metrics are by store, never by ExternalSecret: the soonest
// expiry is what an alert needs (a renewal that keeps failing shows as an
// expiry that comes near), and there are as few series as stores.
var (
	leaseExpiryDesc = prometheus.NewDesc("watchword_store_lease_next_expiry_timestamp_seconds",
		"Unix time at which the soonest of the leases (Vault leases and certificates of dataFrom vaultDynamic, registry tokens of dataFrom registryToken) held from the store for ExternalSecret targets expires unless renewed.",
		[]string{"store_kind", "store"}, nil)
	leaseCountDesc = prometheus.NewDesc("watchword_store_leases",
		"Leases held for ExternalSecret targets, by store: Vault leases and certificates (dataFrom vaultDynamic) and registry tokens (dataFrom registryToken).",
		[]string{"store_kind", "store"}, nil)
)

type heldLease struct {
	kind, store string
	expiry      time.Time
}

// Leases are the leases the ExternalSecret controllers of this process
// hold, by ExternalSecret ("namespace/name"), for the lease metrics.
var Leases = &leaseSet{m: map[string]heldLease{}}

type leaseSet struct {
	sync.Mutex
	m map[string]heldLease
}

// Hold records the lease an ExternalSecret holds from a store.
func (l *leaseSet) Hold(es, storeKind, store string, expiry time.Time) {
	l.Lock()
	defer l.Unlock()
	l.m[es] = heldLease{kind: storeKind, store: store, expiry: expiry}
}

// Drop forgets the lease of an ExternalSecret.
func (l *leaseSet) Drop(es string) {
	l.Lock()
	defer l.Unlock()
	delete(l.m, es)
}

func (l *leaseSet) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaseExpiryDesc
	ch <- leaseCountDesc
}

func (l *leaseSet) Collect(ch chan<- prometheus.Metric) {
	type agg struct {
		soonest time.Time
		n       int
	}
	by := map[[2]string]*agg{}
	l.Lock()
	for _, h := range l.m {
		k := [2]string{h.kind, h.store}
		a := by[k]
		if a == nil {
			a = &agg{soonest: h.expiry}
			by[k] = a
		}
		a.n++
		if h.expiry.Before(a.soonest) {
			a.soonest = h.expiry
		}
	}
	l.Unlock()
	for k, a := range by {
		ch <- prometheus.MustNewConstMetric(leaseExpiryDesc, prometheus.GaugeValue, float64(a.soonest.Unix()), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(leaseCountDesc, prometheus.GaugeValue, float64(a.n), k[0], k[1])
	}
}

func init() { crmetrics.Registry.MustRegister(Leases) }

// leaser counts and times the lease calls of a store: operations
// leaseIssue, leaseRenew and leaseRevoke.
type leaser struct {
	inner engine.Leaser
	observer
}

func (l leaser) Issue(ctx context.Context, req engine.LeaseRequest) (engine.Object, engine.Lease, error) {
	start := time.Now()
	obj, lease, err := l.inner.Issue(ctx, req)
	l.observe("leaseIssue", start, err)
	return obj, lease, err
}

func (l leaser) Renew(ctx context.Context, id string, increment time.Duration) (engine.Lease, error) {
	start := time.Now()
	lease, err := l.inner.Renew(ctx, id, increment)
	l.observe("leaseRenew", start, err)
	return lease, err
}

func (l leaser) Revoke(ctx context.Context, id string) error {
	start := time.Now()
	err := l.inner.Revoke(ctx, id)
	l.observe("leaseRevoke", start, err)
	return err
}
