package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ClientRateLimiterWait is how long requests to the API server waited for
// the client-side rate limit (--kube-api-qps, --kube-api-burst), by verb:
// it shows when that limit, and not the API server, paces a sync. The name
// and labels are those Kubernetes components use for this measure
// (component-base's client metrics), on controller-runtime's registry.
var ClientRateLimiterWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "rest_client_rate_limiter_duration_seconds",
	Help:    "Time requests to the API server waited for the client-side rate limit, by verb and host.",
	Buckets: []float64{0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
}, []string{"verb", "host"})

// rateLimiterWait hands client-go's rate limiter waits to the histogram.
type rateLimiterWait struct{}

func (rateLimiterWait) Observe(_ context.Context, verb string, u url.URL, wait time.Duration) {
	ClientRateLimiterWait.WithLabelValues(verb, u.Host).Observe(wait.Seconds())
}

func init() {
	crmetrics.Registry.MustRegister(ClientRateLimiterWait)
	// client-go takes its metrics once, through metrics.Register, and
	// controller-runtime's own init has already made that call for request
	// counts only; the rate limiter's is an exported variable, set here.
	clientmetrics.RateLimiterLatency = rateLimiterWait{}
}
