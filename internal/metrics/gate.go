package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/watchword-dev/watchword/internal/engine"
)

var (
	// StoreCallsSent counts the calls a store's gate let through to it.
	StoreCallsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_store_calls_sent_total",
		Help: "Calls sent to stores through their gates (reads, version checks, batch reads, writes, deletes, credential checks), by store kind and store.",
	}, []string{"store_kind", "store"})

	// StoreCallsDelayed counts the calls that waited for a store's call
	// budget before they were sent.
	StoreCallsDelayed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_store_calls_delayed_total",
		Help: "Calls to stores that waited for the store's call budget, by store kind and store.",
	}, []string{"store_kind", "store"})

	// StoreCallsRefused counts the calls a store's gate refused without
	// sending them: the budget was spent, or the store is held after it
	// refused the credentials or asked to slow down.
	StoreCallsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_store_calls_refused_total",
		Help: "Calls to stores refused by their gates without reaching the store, by store kind, store and cause (budget, busy, unauthenticated, throttled, unreachable).",
	}, []string{"store_kind", "store", "cause"})
)

func init() {
	crmetrics.Registry.MustRegister(StoreCallsSent, StoreCallsDelayed, StoreCallsRefused)
}

// GateObserver counts what the gate of one store does with its calls.
func GateObserver(storeKind, store string) engine.GateObserver {
	return gateObserver{
		sent:    StoreCallsSent.WithLabelValues(storeKind, store),
		delayed: StoreCallsDelayed.WithLabelValues(storeKind, store),
		kind:    storeKind, store: store,
	}
}

type gateObserver struct {
	sent, delayed prometheus.Counter
	kind, store   string
}

func (o gateObserver) CallSent()    { o.sent.Inc() }
func (o gateObserver) CallDelayed() { o.delayed.Inc() }
func (o gateObserver) CallRefused(cause string) {
	StoreCallsRefused.WithLabelValues(o.kind, o.store, cause).Inc()
}
