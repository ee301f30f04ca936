package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// StoreFreshness is the staleness of the ExternalSecrets of one store, as
// one controller sees it.
type StoreFreshness struct {
	// StoreKind and Store are the labels: the kind, and namespace/name
	// (StoreLabel).
	StoreKind, Store string
	// OldestAge is the age of the oldest successful refresh.
	OldestAge time.Duration
	// Overdue is how many missed their refresh; Count how many there are.
	Overdue, Count int
}

var (
	oldestRefreshDesc = prometheus.NewDesc("watchword_store_oldest_refresh_age_seconds",
		"Age of the oldest successful refresh among the ExternalSecrets with a periodic refresh that read from the store (one never synced counts from its creation).",
		[]string{"store_kind", "store"}, nil)
	overdueDesc = prometheus.NewDesc("watchword_store_overdue_externalsecrets",
		"ExternalSecrets of the store whose last successful refresh is more than two refresh intervals old.",
		[]string{"store_kind", "store"}, nil)
	refreshedDesc = prometheus.NewDesc("watchword_store_refreshed_externalsecrets",
		"ExternalSecrets with a periodic refresh that read from the store.",
		[]string{"store_kind", "store"}, nil)
)

// freshnessSources are the functions the freshness metrics are computed
// from at each scrape: one per ExternalSecret controller in the process
// (tests run several).
var freshnessSources = struct {
	sync.Mutex
	next int
	m    map[int]func() []StoreFreshness
}{m: map[int]func() []StoreFreshness{}}

// AddFreshnessSource adds a source of the freshness metrics; remove takes
// it away again.
func AddFreshnessSource(f func() []StoreFreshness) (remove func()) {
	freshnessSources.Lock()
	defer freshnessSources.Unlock()
	id := freshnessSources.next
	freshnessSources.next++
	freshnessSources.m[id] = f
	return func() {
		freshnessSources.Lock()
		defer freshnessSources.Unlock()
		delete(freshnessSources.m, id)
	}
}

// freshnessCollector computes the freshness metrics when scraped: the
// ages change every second, and a gauge set on every reconcile would cost
// more than a walk of the ExternalSecrets per scrape.
type freshnessCollector struct{}

func (freshnessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- oldestRefreshDesc
	ch <- overdueDesc
	ch <- refreshedDesc
}

func (freshnessCollector) Collect(ch chan<- prometheus.Metric) {
	freshnessSources.Lock()
	sources := make([]func() []StoreFreshness, 0, len(freshnessSources.m))
	for _, f := range freshnessSources.m {
		sources = append(sources, f)
	}
	freshnessSources.Unlock()
	type sum struct {
		oldest          float64
		overdue, counts int
	}
	by := map[[2]string]*sum{}
	var order [][2]string
	for _, f := range sources {
		for _, s := range f() {
			k := [2]string{s.StoreKind, s.Store}
			v := by[k]
			if v == nil {
				v = &sum{}
				by[k] = v
				order = append(order, k)
			}
			v.oldest = max(v.oldest, s.OldestAge.Seconds())
			v.overdue += s.Overdue
			v.counts += s.Count
		}
	}
	for _, k := range order {
		v := by[k]
		ch <- prometheus.MustNewConstMetric(oldestRefreshDesc, prometheus.GaugeValue, v.oldest, k[0], k[1])
		ch <- prometheus.MustNewConstMetric(overdueDesc, prometheus.GaugeValue, float64(v.overdue), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(refreshedDesc, prometheus.GaugeValue, float64(v.counts), k[0], k[1])
	}
}

func init() {
	crmetrics.Registry.MustRegister(freshnessCollector{})
}
