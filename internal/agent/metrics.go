package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Metrics are the agent's Prometheus metrics, in a registry of their own.
// Labels hold directories, remote keys and versions: never a value.
type Metrics struct {
	Registry     *prometheus.Registry
	reads        *prometheus.CounterVec
	changes      *prometheus.CounterVec
	errors       *prometheus.CounterVec
	actions      *prometheus.CounterVec
	actionErrors *prometheus.CounterVec
	version      *prometheus.GaugeVec
}

// NewMetrics registers the agent's metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchword_agent_store_reads_total",
			Help: "Provider calls that read secret data (a batch read counts once), by store."}, []string{"store"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchword_agent_changes_total",
			Help: "Times the files of a directory were replaced."}, []string{"directory"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchword_agent_refresh_errors_total",
			Help: "Refreshes of a directory that failed (its last good files stayed)."}, []string{"directory"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchword_agent_onchange_runs_total",
			Help: "onChange actions run after a change."}, []string{"directory"}),
		actionErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "watchword_agent_onchange_errors_total",
			Help: "onChange actions that failed."}, []string{"directory"}),
		version: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "watchword_agent_delivered_version_info",
			Help: "1 for each remote key and version whose data a directory holds."}, []string{"directory", "key", "version"}),
	}
	m.Registry.MustRegister(m.reads, m.changes, m.errors, m.actions, m.actionErrors, m.version,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) setVersions(dir string, old, now []v1alpha1.RemoteVersion) {
	for _, v := range old {
		m.version.DeleteLabelValues(dir, v.Key, v.Version)
	}
	for _, v := range now {
		m.version.WithLabelValues(dir, v.Key, v.Version).Set(1)
	}
}

// Serve answers /healthz, /readyz (ready once every directory was
// delivered) and /metrics on addr until ctx ends. It returns the address
// it listens on through bound, for addresses with port 0.
func Serve(ctx context.Context, addr string, a *Agent, bound func(string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if bound != nil {
		bound(ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "not every directory has been delivered yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(a.metrics.Registry, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { //nolint:gosec // the shutdown starts once ctx is done, so it cannot use ctx; its own deadline bounds it
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
