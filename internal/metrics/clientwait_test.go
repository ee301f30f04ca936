package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// slowLimiter makes every request wait a fixed time, as a spent token
// bucket would.
type slowLimiter struct{ wait time.Duration }

func (l slowLimiter) TryAccept() bool { return false }
func (l slowLimiter) Accept()         { time.Sleep(l.wait) }
func (l slowLimiter) Stop()           {}
func (l slowLimiter) QPS() float32    { return 1 }
func (l slowLimiter) Wait(ctx context.Context) error {
	select {
	case <-time.After(l.wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestRequestsThatWaitForTheClientRateLimitAreMeasured(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	defer srv.Close()
	const wait = 20 * time.Millisecond
	c, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, RateLimiter: slowLimiter{wait},
		ContentConfig: rest.ContentConfig{GroupVersion: &schema.GroupVersion{Version: "v1"},
			NegotiatedSerializer: serializer.WithoutConversionCodecFactory{CodecFactory: scheme.Codecs}}})
	if err != nil {
		t.Fatal(err)
	}
	h := ClientRateLimiterWait.WithLabelValues("PUT", srv.Listener.Addr().String()).(prometheus.Metric)
	before := histogram(t, h)
	for range 3 {
		if err := c.Put().AbsPath("/api/v1/namespaces/a/secrets/b").Body([]byte("{}")).Do(context.Background()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	after := histogram(t, h)
	if n := after.GetSampleCount() - before.GetSampleCount(); n != 3 {
		t.Fatalf("%d waits measured for 3 requests", n)
	}
	if s := after.GetSampleSum() - before.GetSampleSum(); s < 3*wait.Seconds() {
		t.Fatalf("waits measured sum to %.3fs, less than the %.3fs the limiter made them wait", s, 3*wait.Seconds())
	}
	if n, err := testutil.GatherAndCount(crmetrics.Registry, "rest_client_rate_limiter_duration_seconds"); err != nil || n == 0 {
		t.Fatalf("the histogram is not served with the other metrics: %d series, %v", n, err)
	}
}

func histogram(t *testing.T, o interface{ Write(*dto.Metric) error }) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := o.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
