package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/refreshhook"
	"github.com/watchword-dev/watchword/test/promserver"
)

const dashboardFile = "../../deploy/grafana/watchword.json"

// grafanaDashboard is the part of a Grafana dashboard's JSON model the
// tests read: the panels (rows may nest theirs) with their queries, and
// the template variables.
type grafanaDashboard struct {
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Targets     []grafanaQuery `json:"targets"`
	Panels      []grafanaPanel `json:"panels"`
}

type grafanaQuery struct {
	RefID string `json:"refId"`
	Expr  string `json:"expr"`
}

// grafanaVariable is a template variable. Its query is a string for a
// data source variable, an object for a query variable.
type grafanaVariable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// panelQuery is one query of a panel, named for failure messages.
type panelQuery struct{ panel, expr string }

func readDashboard(t *testing.T) (grafanaDashboard, []panelQuery) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	must(t, err)
	var d grafanaDashboard
	must(t, json.Unmarshal(raw, &d))
	var qs []panelQuery
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Title == "" || p.Description == "" || len(p.Targets) == 0 {
				t.Errorf("panel %q (%s) needs a title, a description and a query", p.Title, p.Type)
			}
			for _, q := range p.Targets {
				qs = append(qs, panelQuery{panel: p.Title + "/" + q.RefID, expr: q.Expr})
			}
		}
	}
	walk(d.Panels)
	return d, qs
}

// documentedMetrics reads the names in the metrics table of
// docs/operations.md.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/operations.md")
	must(t, err)
	var names []string
	row := regexp.MustCompile("(?m)^\\| `(watchword_[a-z_]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatal("no metrics table found in docs/operations.md")
	}
	return names
}

var metricName = regexp.MustCompile(`watchword_[a-z_]+`)

// TestDashboardCoversTheDocumentedMetrics: every metric of the table in
// docs/operations.md is shown by a panel of the Grafana dashboard, and
// every metric a panel queries is in the table (a histogram's _bucket,
// _sum and _count series count as its name).
func TestDashboardCoversTheDocumentedMetrics(t *testing.T) {
	parallel(t)
	_, qs := readDashboard(t)
	documented := documentedMetrics(t)
	shown := map[string][]string{}
	for _, q := range qs {
		for _, used := range metricName.FindAllString(q.expr, -1) {
			base := used
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if trimmed, ok := strings.CutSuffix(used, suffix); ok && slices.Contains(documented, trimmed) {
					base = trimmed
				}
			}
			if !slices.Contains(documented, base) {
				t.Errorf("panel %s queries %s, which docs/operations.md does not document", q.panel, used)
			}
			shown[base] = append(shown[base], q.panel)
		}
	}
	for _, m := range documented {
		if len(shown[m]) == 0 {
			t.Errorf("no panel of %s shows the documented metric %s", dashboardFile, m)
		}
	}
	t.Logf("%d documented metrics, shown by %d queries", len(documented), len(qs))
}

// grafanaVars are the values the test gives Grafana's built-in variables:
// $__rate_interval is at least four scrape intervals (the scrape is every
// second), $__range is the dashboard's time range.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "${__rate_interval}", "1m", "$__range", "10m", "${__range}", "10m")

// labelValues matches a Grafana variable query label_values(METRIC, LABEL).
var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*([a-z_]+)\s*\)$`)

// TestDashboardQueriesReturnData: a real Prometheus (Debian's package)
// scrapes a running watchword controller (the command, in a process of its
// own) every second while it syncs, fails, rotates, restarts a workload,
// holds another, publishes, refuses a notification and runs into a store's
// call budget. Then the
// dashboard's job variable and every query of every panel, with the
// variables filled in as Grafana fills them, return data through the
// /api/v1/query API: no panel refers to a metric that does not exist.
// After a second rotation, the panels that count rotations, restarts and
// publications show it.
func TestDashboardQueriesReturnData(t *testing.T) {
	parallel(t)
	promBin, skip, err := promserver.Lookup()
	must(t, err)
	if skip != "" {
		t.Skip(skip)
	}
	dash, queries := readDashboard(t)
	const class, job = "dashboard", "watchword-dashboard"

	metricsAddr, err := freeLoopbackAddr()
	must(t, err)
	hookAddr, err := freeLoopbackAddr()
	must(t, err)
	startControllerProcess(t, "--controller-class", class, "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--refresh-hook-bind-address", hookAddr, "--restart-rate", "60")
	prom, err := promserver.Start(context.Background(), promBin, job, metricsAddr)
	must(t, err)
	t.Cleanup(prom.Stop)

	// The world the controller serves: a kubernetes store it reads,
	// watches and publishes to, a fake store one of whose keys is missing,
	// and two opted-in Deployments, one of them with a window that does
	// not parse.
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	deps := watchDeployments(t, ns)
	sa := secretsAccount(t, remote, "dashboard", "get", "list", "watch", "create", "update", "delete")
	createSecret(t, ns, "remote-token", map[string]string{"token": accountToken(t, remote, sa)})
	createSecret(t, remote, "upstream", map[string]string{"password": "one"})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: remote,
			Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: "remote-token", Key: "token"}}},
		}}}}))
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fake"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{
			Data: []v1alpha1.FakeProviderData{{Key: "db", Value: `{"user":"app"}`}}}}}}))
	newES(t, ns, "app", "remote", withRefresh(time.Second), withData("password", "upstream", "password"))
	newES(t, ns, "broken", "fake", withRefresh(time.Second), withData("password", "no-such-key", ""))
	// A store with a call budget far below what its refreshes want, so
	// that its gate delays some calls and refuses others.
	perMinute, burst := int32(60), int32(1)
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, Limits: &v1alpha1.StoreLimits{CallsPerMinute: &perMinute, Burst: &burst},
			SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{
				Data: []v1alpha1.FakeProviderData{{Key: "k0", Value: "v"}, {Key: "k1", Value: "v"}, {Key: "k2", Value: "v"},
					{Key: "k3", Value: "v"}, {Key: "k4", Value: "v"}, {Key: "k5", Value: "v"}}}}}}))
	// Six keys refreshed every second: reads of one key are shared, of
	// different keys they are not, so the store is asked six times a second.
	for i := range 6 {
		newES(t, ns, fmt.Sprintf("budget-%d", i), "budget", withRefresh(time.Second), withData("v", fmt.Sprintf("k%d", i), ""))
	}
	// A Vault store whose ExternalSecret holds a PKI certificate: a lease,
	// for the lease panels.
	needVault(t)
	pki := "pki-" + ns
	must(t, vaultSrv.Do(http.MethodPost, "sys/mounts/"+pki, map[string]any{"type": "pki"}, nil))
	t.Cleanup(func() { _ = vaultSrv.Do(http.MethodDelete, "sys/mounts/"+pki, nil, nil) })
	must(t, vaultSrv.Do(http.MethodPost, pki+"/root/generate/internal", map[string]any{"common_name": "dashboard root", "ttl": "2h"}, nil))
	must(t, vaultSrv.Do(http.MethodPost, pki+"/roles/web", map[string]any{"allow_any_name": true, "ttl": "1h"}, nil))
	createSecret(t, ns, "vault-token", map[string]string{"token": vaultSrv.RootToken})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vault"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Vault: &v1alpha1.VaultProvider{
			Server: vaultSrv.Addr(), Version: "v2", Auth: tokenAuth("vault-token")}}}}))
	must(t, k8s.Create(context.Background(), &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"},
		Spec: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "vault"},
			DataFrom: []v1alpha1.ExternalSecretDataFrom{{VaultDynamic: &v1alpha1.VaultDynamicSecret{
				Path: pki + "/issue/web", Method: http.MethodPost, Parameters: map[string]string{"common_name": "web.example"}}}}}}))
	waitSecretData(t, ns, "app", map[string]string{"password": "one"})
	waitReady(t, ns, "cert")
	waitCondition(t, ns, "broken", "NotFound")
	ann := map[string]string{restart.OnAnnotation: "app", restart.DebounceAnnotation: "1s", restart.ClassAnnotation: class}
	newWorkload(t, ns, "web", ann, envFrom("app"))
	typo := map[string]string{restart.WindowAnnotation: "Mon-Fri 02:00-04:00"}
	for k, v := range ann {
		typo[k] = v
	}
	newWorkload(t, ns, "typo", typo, envFrom("app"))
	waitRecorded(t, ns, "web", "app")
	waitRecorded(t, ns, "typo", "app")
	newPush(t, ns, "copy", "app", pushTo("copy", viaStore(v1alpha1.SecretStoreKind, "remote")), pushKey("password", ""))
	waitPushReady(t, ns, "copy")

	// A rotation: the store's watch tells it, the target follows, the
	// web Deployment restarts, the typo one is held, and the copy is
	// published again.
	rotate(t, remote, "password", "two")
	waitSecretData(t, ns, "app", map[string]string{"password": "two"})
	deps.waitRestarts(t, "web", 1, 2*wait)
	waitEvent(t, ns, "typo", restart.ReasonHeld, "")
	body := fmt.Sprintf(`{"store": {"kind": "SecretStore", "namespace": %q, "name": "remote"}, "keys": ["upstream"]}`, ns)
	hookURL := "http://" + hookAddr + refreshhook.Path
	resp, err := http.Post(hookURL, "application/json", strings.NewReader(body))
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned notification got %d, want 401", resp.StatusCode)
	}

	cl, err := api.NewClient(api.Config{Address: prom.URL})
	must(t, err)
	q := promv1.NewAPI(cl)
	jobValue := jobVariable(t, q, dash, job)
	fill := func(expr string) string {
		return strings.NewReplacer(`"$job"`, fmt.Sprintf("%q", regexp.QuoteMeta(jobValue)), `"${job}"`, fmt.Sprintf("%q", regexp.QuoteMeta(jobValue))).
			Replace(grafanaVars.Replace(expr))
	}
	// Prometheus scrapes every second; a query whose data was scraped
	// answers within a few scrapes. The deadline is for a loaded machine.
	var missing []string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		missing = missing[:0]
		for _, pq := range queries {
			if why := queryHasData(q, fill(pq.expr)); why != "" {
				missing = append(missing, fmt.Sprintf("%s: %s: %s", pq.panel, fill(pq.expr), why))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d dashboard queries returned no data:\n%s", len(missing), len(queries), strings.Join(missing, "\n"))
	}
	t.Logf("all %d dashboard queries returned data; job variable: %q", len(queries), jobValue)

	// A counter's series appears with its first increment, which rate()
	// and increase() cannot see (they need two samples). A second
	// rotation, now that the series exist, must show in the panels that
	// count rotations, restarts and publications.
	rotate(t, remote, "password", "three")
	waitSecretData(t, ns, "app", map[string]string{"password": "three"})
	deps.waitRestarts(t, "web", 2, 2*wait)
	counted := map[string]bool{"Rotations, by store/A": true, "Rotations in range/A": true,
		"Workloads restarted/A": true, "Publications, by outcome/A": true}
	for _, pq := range queries {
		if !counted[pq.panel] {
			continue
		}
		delete(counted, pq.panel)
		eventually(t, 2*time.Minute, func() (bool, string) {
			got, _, err := q.Query(context.Background(), fill(pq.expr), time.Now())
			if err != nil {
				return false, err.Error()
			}
			for _, smp := range got.(model.Vector) {
				if smp.Value > 0 {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s shows no second rotation: %s", pq.panel, got)
		})
	}
	if len(counted) > 0 {
		t.Errorf("the dashboard has no panels %v", counted)
	}
	for _, pq := range queries {
		t.Logf("%s: %s", pq.panel, seriesOf(q, fill(pq.expr)))
	}
}

// seriesOf describes the answer to a query: its series' labels and values.
func seriesOf(q promv1.API, expr string) string {
	v, _, err := q.Query(context.Background(), expr, time.Now())
	if err != nil {
		return err.Error()
	}
	vec, _ := v.(model.Vector)
	parts := make([]string, 0, len(vec))
	for _, s := range vec {
		parts = append(parts, fmt.Sprintf("%s=%.3g", s.Metric, float64(s.Value)))
	}
	return fmt.Sprintf("%d series: %s", len(vec), strings.Join(parts, ", "))
}

// jobVariable evaluates the dashboard's job variable, a label_values()
// query, as Grafana does through Prometheus, and returns the value that
// names the test's scrape job.
func jobVariable(t *testing.T, q promv1.API, dash grafanaDashboard, job string) string {
	t.Helper()
	for _, v := range dash.Templating.List {
		if v.Name != "job" {
			continue
		}
		var query struct {
			Query string `json:"query"`
		}
		must(t, json.Unmarshal(v.Query, &query))
		m := labelValues.FindStringSubmatch(query.Query)
		if m == nil {
			t.Fatalf("the job variable's query %q is not label_values(METRIC, LABEL)", query.Query)
		}
		var values []string
		eventually(t, 2*time.Minute, func() (bool, string) {
			got, _, err := q.Query(context.Background(), fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), time.Now())
			if err != nil {
				return false, err.Error()
			}
			values = values[:0]
			for _, s := range got.(model.Vector) {
				values = append(values, string(s.Metric[model.LabelName(m[2])]))
			}
			sort.Strings(values)
			return slices.Contains(values, job), fmt.Sprintf("the job variable's values are %q, want %q among them", values, job)
		})
		return job
	}
	t.Fatal("the dashboard has no job variable")
	return ""
}

// queryHasData runs an instant query and returns why it has no data: an
// error, an empty result, or only NaN samples; or "" when it has some.
func queryHasData(q promv1.API, expr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, err := q.Query(ctx, expr, time.Now())
	if err != nil {
		return err.Error()
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return fmt.Sprintf("a %s, not an instant vector", v.Type())
	}
	for _, s := range vec {
		if !math.IsNaN(float64(s.Value)) {
			return ""
		}
	}
	if len(vec) > 0 {
		return fmt.Sprintf("%d series, all NaN", len(vec))
	}
	return "no series"
}

// startControllerProcess runs `watchword controller` with the suite's
// kubeconfig and the flags, in a process of its own, until the test ends.
func startControllerProcess(t *testing.T, flags ...string) {
	t.Helper()
	bin := watchwordBinary(t)
	kc, err := cluster.Kubeconfig()
	must(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	logs := filepath.Join(t.TempDir(), "controller.log")
	out, err := os.Create(logs)
	must(t, err)
	cmd := exec.Command(bin, append([]string{"controller", "--kubeconfig", kubeconfig}, flags...)...)
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		// The exit status after a signal says nothing useful.
		select {
		case werr := <-done:
			_ = werr
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			werr := <-done
			_ = werr
		}
		_ = out.Close()
		if t.Failed() {
			if raw, rerr := os.ReadFile(logs); rerr == nil {
				t.Logf("controller log:\n%s", raw)
			}
		}
	})
}
