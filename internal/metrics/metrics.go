// Package metrics defines Watchword's Prometheus metrics. Labels carry
// kinds, providers, operations and reasons: never a name of a secret, a key
// or a value.
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/watchword-dev/watchword/internal/engine"
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

	// SyncErrors counts failed syncs by reason.
	SyncErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchword_sync_errors_total",
		Help: "Failed ExternalSecret syncs, by reason.",
	}, []string{"reason"})
)

func init() {
	crmetrics.Registry.MustRegister(SyncDuration, ProviderCalls, ProviderLatency, SyncErrors)
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

// Instrument wraps a provider reader so that its calls are counted and
// timed. Optional capabilities of the inner reader stay visible.
func Instrument(r engine.Reader, providerName, storeKind string) engine.Reader {
	return &instrumented{inner: r, provider: providerName, kind: storeKind}
}

type instrumented struct {
	inner          engine.Reader
	provider, kind string
}

func (i *instrumented) observe(op string, start time.Time, err error) {
	result := "ok"
	if err != nil {
		reason, _ := engine.Classify(err)
		result = string(reason)
	}
	ProviderCalls.WithLabelValues(i.provider, i.kind, op, result).Inc()
	ProviderLatency.WithLabelValues(i.provider, i.kind, op).Observe(time.Since(start).Seconds())
}

func (i *instrumented) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	start := time.Now()
	obj, err := i.inner.GetSecret(ctx, ref)
	i.observe("get", start, err)
	return obj, err
}

// CurrentVersion forwards to the inner reader, if it can tell versions.
func (i *instrumented) CurrentVersion(ctx context.Context, key string) (string, error) {
	vr, ok := i.inner.(engine.VersionReader)
	if !ok {
		return "", engine.ErrNotSupported
	}
	start := time.Now()
	v, err := vr.CurrentVersion(ctx, key)
	i.observe("version", start, err)
	return v, err
}

// PutSecret forwards to the inner reader, if it can write.
func (i *instrumented) PutSecret(ctx context.Context, key string, fields map[string][]byte, owner engine.Owner) error {
	w, ok := i.inner.(engine.Writer)
	if !ok {
		return engine.ErrNotSupported
	}
	start := time.Now()
	err := w.PutSecret(ctx, key, fields, owner)
	i.observe("put", start, err)
	return err
}

// DeleteSecret forwards to the inner reader, if it can write.
func (i *instrumented) DeleteSecret(ctx context.Context, key string, owner engine.Owner) error {
	w, ok := i.inner.(engine.Writer)
	if !ok {
		return engine.ErrNotSupported
	}
	start := time.Now()
	err := w.DeleteSecret(ctx, key, owner)
	i.observe("delete", start, err)
	return err
}

// Check forwards to the inner reader's Check, if it has one.
func (i *instrumented) Check(ctx context.Context) error {
	c, ok := i.inner.(interface{ Check(context.Context) error })
	if !ok {
		return nil
	}
	start := time.Now()
	err := c.Check(ctx)
	i.observe("check", start, err)
	return err
}

// Close forwards to the inner reader's Close, if it has one.
func (i *instrumented) Close() error {
	if c, ok := i.inner.(engine.Closer); ok {
		return c.Close()
	}
	return nil
}

// Unwrap returns the inner reader.
func (i *instrumented) Unwrap() engine.Reader { return i.inner }
