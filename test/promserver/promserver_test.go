package promserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// TestServerScrapesATarget: the server scrapes an endpoint every second,
// and a query through its HTTP API returns the endpoint's sample.
func TestServerScrapesATarget(t *testing.T) {
	bin, skip, err := Lookup()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "promserver_test_total", Help: "a test counter"})
	reg.MustRegister(c)
	c.Add(3)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer target.Close()

	ctx := context.Background()
	s, err := Start(ctx, bin, "probe", strings.TrimPrefix(target.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	cl, err := api.NewClient(api.Config{Address: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	q := promv1.NewAPI(cl)
	deadline := time.Now().Add(time.Minute)
	for {
		v, _, err := q.Query(ctx, `promserver_test_total{job="probe"}`, time.Now())
		if err == nil {
			if vec, ok := v.(model.Vector); ok && len(vec) == 1 {
				if vec[0].Value != 3 {
					t.Fatalf("got %v, want 3", vec[0].Value)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample scraped within a minute (last answer %v, %v); logs:\n%s", v, err, s.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPromtoolChecksRules: the promtool found beside the server checks a
// rules file, accepting a good rule and refusing one that does not parse.
func TestPromtoolChecksRules(t *testing.T) {
	bin, skip, err := LookupPromtool()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	const rule = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: %s\n"
	if err := os.WriteFile(good, []byte(fmt.Sprintf(rule, "up == 0")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(fmt.Sprintf(rule, "up ==")), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", good).CombinedOutput(); err != nil {
		t.Errorf("promtool refused a good rule: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "check", "rules", bad).CombinedOutput(); err == nil {
		t.Errorf("promtool accepted a rule that does not parse:\n%s", out)
	}
}
