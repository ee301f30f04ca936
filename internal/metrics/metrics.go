// Package metrics defines Watchword's Prometheus metrics. Labels carry
// kinds, providers, store names, operations and reasons: never a name of a
// secret, a key or a value.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

var (
	// SyncDuration is how long one ExternalSecret reconcile took.
	SyncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "watchword_sync_duration_seconds",
		Help:    "Duration of ExternalSecret reconciles, by outcome reason.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"reason"})

	// ProviderCalls counts calls to providers.
	ProviderCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_provider_calls_total",
		Help: "Calls to secret store providers, by provider, store kind, operation and result.",
	}, []string{"provider", "store_kind", "operation", "result"})

	// ProviderLatency is the latency of provider calls.
	ProviderLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "watchword_provider_call_duration_seconds",
		Help:    "Latency of calls to secret store providers.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"provider", "store_kind", "operation"})

	// Rotations counts rotations: new data from a store delivered to a
	// target. The store label is namespace/name (a ClusterSecretStore's
	// name alone): stores are few, and their names are not secret.
	Rotations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_rotations_total",
		Help: "Rotations delivered to ExternalSecret targets, by provider, store kind and store.",
	}, []string{"provider", "store_kind", "store"})

	// Publications counts the outcomes of publishing: each write, repair,
	// unpublish, retention and failure of one destination.
	Publications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_publications_total",
		Help: "Outcomes of publishing to remote secrets, by publisher kind, store kind, store and outcome (Published, DriftRepaired, Unpublished, Retained, or a failure's reason).",
	}, []string{"publisher_kind", "store_kind", "store", "outcome"})

	// WatchNotifications counts the changes that stores' watches told of
	// (each a batch of keys, or "anything may have changed"), by store;
	// never by key, which can be many.
	WatchNotifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_store_watch_notifications_total",
		Help: "Changes told by the watches of stores, handed to the ExternalSecret controller, by store kind and store.",
	}, []string{"store_kind", "store"})

	// RefreshHookRefusals counts the refusals of the refresh endpoint by
	// their specific reason (which the answer itself does not tell).
	RefreshHookRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_refresh_hook_refusals_total",
		Help: "Notifications refused by the refresh endpoint, by reason.",
	}, []string{"reason"})

	// Restarts counts the workloads restarted for rotations. Namespaces
	// and kinds are few; workload names are not labels.
	Restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_workload_restarts_total",
		Help: "Workloads restarted for rotations of the Secrets they consume, by namespace and kind.",
	}, []string{"namespace", "kind"})

	// RestartsHeld counts the holds of due restarts: each time a due
	// restart starts to wait for a reason, not each time it is tried
	// again.
	RestartsHeld = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_workload_restarts_held_total",
		Help: "Due restarts of workloads held back, by namespace, kind and reason (RateLimited, RolloutInProgress, PreviousRestartNotAvailable, MaintenanceWindow, InvalidWindow); counted once per hold.",
	}, []string{"namespace", "kind", "reason"})

	// SyncErrors counts failed syncs by reason.
	SyncErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_sync_errors_total",
		Help: "Failed ExternalSecret syncs, by reason.",
	}, []string{"reason"})
)

func init() {
	crmetrics.Registry.MustRegister(SyncDuration, ProviderCalls, ProviderLatency, SyncErrors, Rotations, Publications,
		WatchNotifications, RefreshHookRefusals, Restarts, RestartsHeld)
}

// SyncObserver records sync outcomes.
type SyncObserver struct{}

// ObserveSync records one reconcile.
func (SyncObserver) ObserveSync(d time.Duration, reason string) {
	SyncDuration.WithLabelValues(reason).Observe(d.Seconds())
	switch reason {
	case "SecretSynced", "Skipped", "Unknown", "":
	default:
		SyncErrors.WithLabelValues(reason).Inc()
	}
}

// StoreLabel names a store in metrics: namespace/name, or the name of a
// ClusterSecretStore. A store's name is not secret, and there are as few
// as there are stores.
func StoreLabel(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// ObserveRotation counts one rotation.
func (SyncObserver) ObserveRotation(provider, storeKind, store string) {
	Rotations.WithLabelValues(provider, storeKind, store).Inc()
}

// Instrument wraps a store's client so that its calls are counted and
// timed. The wrapped client has exactly the capabilities of c: Wrap keeps
// absent the operations that c lacks.
func Instrument(c *engine.Client, storeKind string) *engine.Client {
	obs := observer{provider: c.Provider(), kind: storeKind}
	return c.Wrap(func(ops engine.Ops) engine.Ops {
		out := engine.Ops{Reader: reader{ops.Reader, obs}}
		if ops.Versions != nil {
			out.Versions = versions{ops.Versions, obs}
		}
		if ops.Batch != nil {
			out.Batch = batch{ops.Batch, obs}
		}
		if ops.Lister != nil {
			out.Lister = lister{ops.Lister, obs}
		}
		if ops.Metadata != nil {
			out.Metadata = metadataReader{ops.Metadata, obs}
		}
		if ops.Writer != nil {
			out.Writer = writer{ops.Writer, obs}
		}
		if ops.Checker != nil {
			out.Checker = checker{ops.Checker, obs}
		}
		if ops.Leaser != nil {
			out.Leaser = leaser{ops.Leaser, obs}
		}
		return out
	})
}

type observer struct{ provider, kind string }

func (o observer) observe(op string, start time.Time, err error) {
	result := "ok"
	if err != nil {
		result = string(failure.Classify(err).Reason)
	}
	ProviderCalls.WithLabelValues(o.provider, o.kind, op, result).Inc()
	ProviderLatency.WithLabelValues(o.provider, o.kind, op).Observe(time.Since(start).Seconds())
}

type reader struct {
	inner engine.Reader
	observer
}

func (r reader) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	start := time.Now()
	obj, err := r.inner.GetSecret(ctx, ref)
	r.observe("get", start, err)
	return obj, err
}

type metadataReader struct {
	inner engine.MetadataReader
	observer
}

func (r metadataReader) GetMetadata(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	start := time.Now()
	obj, err := r.inner.GetMetadata(ctx, ref)
	r.observe("getMetadata", start, err)
	return obj, err
}

type versions struct {
	inner engine.VersionReader
	observer
}

func (v versions) CurrentVersion(ctx context.Context, key string) (string, error) {
	start := time.Now()
	ver, err := v.inner.CurrentVersion(ctx, key)
	v.observe("version", start, err)
	return ver, err
}

type lister struct {
	inner engine.Lister
	observer
}

func (l lister) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	start := time.Now()
	page, err := l.inner.List(ctx, req)
	l.observe("list", start, err)
	return page, err
}

type writer struct {
	inner engine.Writer
	observer
}

func (w writer) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	start := time.Now()
	version, err := w.inner.PutSecret(ctx, key, p, owner)
	w.observe("put", start, err)
	return version, err
}

func (w writer) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	start := time.Now()
	err := w.inner.DeleteSecret(ctx, key, owner)
	w.observe("delete", start, err)
	return err
}

type checker struct {
	inner engine.Checker
	observer
}

func (c checker) Check(ctx context.Context) error {
	start := time.Now()
	err := c.inner.Check(ctx)
	c.observe("check", start, err)
	return err
}
