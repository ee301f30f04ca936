package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/test/promserver"
)

// The chart's monitoring objects: the Grafana dashboard's ConfigMap and
// the PrometheusRule. Both are rendered with Helm; the rules are checked
// and unit-tested with promtool from Debian's prometheus package (`make
// tools-prometheus`). Neither needs the control plane.

const (
	alertsValues = "testdata/helm-values-alerts.yaml"
	// alertsRelease is the release the rules' unit tests were written for:
	// its job is alertsJob.
	alertsRelease = "wwalerts"
	alertsJob     = `job="wwalerts-watchword-metrics"`
	alertsTests   = "testdata/prometheusrule-test.yaml"
)

// needPromtool returns promtool; without it the test is skipped, or fails
// when $WATCHWORD_REQUIRE_PROMETHEUS is set.
func needPromtool(t *testing.T) string {
	t.Helper()
	bin, skip, err := promserver.LookupPromtool()
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	return bin
}

// valuesFile writes a values file for helm template.
func valuesFile(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	must(t, os.WriteFile(f, []byte(body), 0o600))
	return f
}

// TestHelmChartGrafanaDashboard: metrics.grafanaDashboard renders a
// ConfigMap holding exactly deploy/grafana/watchword.json, with the
// Grafana sidecar's label, the annotations given, in the namespace given
// (else the release's); by default there is none.
func TestHelmChartGrafanaDashboard(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	if cms := helmTemplate(t, helm, alertsRelease, "watchword").find("ConfigMap"); len(cms) != 0 {
		t.Errorf("the chart renders %d ConfigMaps by default; the dashboard's is opt-in", len(cms))
	}
	want, err := os.ReadFile(dashboardFile)
	must(t, err)
	if !json.Valid(want) {
		t.Fatalf("%s is not JSON", dashboardFile)
	}
	for _, tc := range []struct {
		name, values, namespace string
		annotations             map[string]string
	}{
		{name: "values file", values: alertsValues, namespace: "grafana", annotations: map[string]string{"grafana_folder": "Watchword"}},
		{name: "defaults", values: valuesFile(t, "metrics:\n  grafanaDashboard:\n    enabled: true\n"), namespace: "watchword"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := helmTemplate(t, helm, alertsRelease, "watchword", tc.values).one(t, "ConfigMap")
			if cm.GetNamespace() != tc.namespace {
				t.Errorf("the dashboard's ConfigMap is in namespace %q, want %q", cm.GetNamespace(), tc.namespace)
			}
			if got := cm.GetLabels()["grafana_dashboard"]; got != "1" {
				t.Errorf("label grafana_dashboard is %q, want \"1\" (the Grafana sidecar's default)", got)
			}
			for k, v := range tc.annotations {
				if cm.GetAnnotations()[k] != v {
					t.Errorf("annotation %s is %q, want %q", k, cm.GetAnnotations()[k], v)
				}
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			if len(data) != 1 {
				t.Errorf("the ConfigMap holds keys %v, want watchword.json alone", slices.Sorted(maps.Keys(data)))
			}
			if got := data["watchword.json"]; got != string(want) {
				t.Errorf("the ConfigMap's watchword.json (%d bytes) is not %s (%d bytes): run make deploy-files", len(got), dashboardFile, len(want))
			}
		})
	}
}

// alertRule is the part of a Prometheus rule the test reads.
type alertRule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroup struct {
	Name  string      `json:"name"`
	Rules []alertRule `json:"rules"`
}

// renderRules renders the chart with the values files and returns its
// PrometheusRule and the rule groups, written as a rules file into dir.
func renderRules(t *testing.T, helm, dir string, values ...string) (*unstructured.Unstructured, []ruleGroup, string) {
	t.Helper()
	pr := helmTemplate(t, helm, alertsRelease, "watchword", values...).one(t, "PrometheusRule")
	groups, found, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil || !found {
		t.Fatalf("the PrometheusRule has no spec.groups (%v)", err)
	}
	raw, err := yaml.Marshal(map[string]any{"groups": groups})
	must(t, err)
	file := filepath.Join(dir, "rules.yaml")
	must(t, os.WriteFile(file, raw, 0o600))
	var parsed struct {
		Groups []ruleGroup `json:"groups"`
	}
	must(t, yaml.UnmarshalStrict(raw, &parsed))
	return pr, parsed.Groups, file
}

// checkRules runs `promtool check rules` and checks the number of rules it
// found.
func checkRules(t *testing.T, promtool, file string, groups []ruleGroup) {
	t.Helper()
	n := 0
	for _, g := range groups {
		n += len(g.Rules)
	}
	out := run(t, promtool, "check", "rules", file)
	if want := fmt.Sprintf("SUCCESS: %d rules found", n); !strings.Contains(string(out), want) {
		t.Errorf("promtool check rules: want %q, got:\n%s", want, out)
	}
}

// selector matches a metric's name followed by its label matchers; every
// alert of the chart selects each metric with the release's matchers, so
// this finds every metric an expression reads (PromQL's functions and
// keywords are followed by parentheses or nothing, never by braces).
var selector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)

// TestHelmChartPrometheusRule: metrics.prometheusRule renders a
// PrometheusRule whose groups promtool accepts (`promtool check rules`) and
// whose alerts pass the unit tests of testdata/prometheusrule-test.yaml
// (`promtool test rules`): each alert fires on the series of its fault,
// with its labels and annotations, and not on healthy series. The unit
// tests cover every alert of the chart. Every metric an alert reads is in
// the table of docs/operations.md (or is Prometheus's own up), and every
// selector is scoped to the release's job. Each alert has a severity, a
// summary and a description that points at the docs. The values tune an
// alert, turn one off, and change the selector; values.schema.json refuses
// a negative threshold, a duration Prometheus cannot read and an unknown
// alert.
func TestHelmChartPrometheusRule(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	promtool := needPromtool(t)
	if prs := helmTemplate(t, helm, alertsRelease, "watchword").find("PrometheusRule"); len(prs) != 0 {
		t.Errorf("the chart renders a PrometheusRule by default; it is opt-in")
	}

	dir := t.TempDir()
	pr, groups, file := renderRules(t, helm, dir, alertsValues)
	if pr.GetAPIVersion() != "monitoring.coreos.com/v1" || pr.GetNamespace() != "watchword" || pr.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule %s, namespace %q, labels %v: want monitoring.coreos.com/v1 in the release's namespace with the labels given",
			pr.GetAPIVersion(), pr.GetNamespace(), pr.GetLabels())
	}
	checkRules(t, promtool, file, groups)
	if len(groups) != 1 {
		t.Fatalf("%d rule groups, want 1", len(groups))
	}
	rules := groups[0].Rules
	if last := rules[len(rules)-1]; last.Record != "job:watchword_rotations:rate5m" {
		t.Errorf("the last rule is %+v, want the extra rule of %s", last, alertsValues)
	}

	// The unit tests, beside the rules file they name.
	tests, err := os.ReadFile(alertsTests)
	must(t, err)
	testFile := filepath.Join(dir, "prometheusrule-test.yaml")
	must(t, os.WriteFile(testFile, tests, 0o600))
	out := run(t, promtool, "test", "rules", testFile)
	if !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules:\n%s", out)
	}
	var unit struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	must(t, yaml.Unmarshal(tests, &unit))
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}

	documented := documentedMetrics(t)
	var alerts []string
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		alerts = append(alerts, r.Alert)
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: %s must have a case where it fires (%v) and one where it does not (%v)", r.Alert, alertsTests, fires[r.Alert], quiet[r.Alert])
		}
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], "docs/") {
			t.Errorf("%s: want a severity label, a summary and a description that points at the docs; got labels %v, annotations %v", r.Alert, r.Labels, r.Annotations)
		}
		checkAlertMetrics(t, r, documented, alertsJob)
	}
	if len(alerts) != 12 {
		t.Errorf("%d alerts %v, want the 12 of values.yaml", len(alerts), alerts)
	}
	t.Logf("%d alerts and %d extra rule checked by promtool; unit tests cover %d firing and %d quiet alerts", len(alerts), len(rules)-len(alerts), len(fires), len(quiet))

	// Tuning: one alert off, another with its own for, severity and
	// threshold, and every selector replaced.
	tuned := valuesFile(t, `metrics:
  prometheusRule:
    enabled: true
    selector: job="watchword"
    alerts:
      storeThrottled:
        enabled: false
      storeUnauthenticated:
        for: 1m
        severity: page
        threshold: 3
`)
	_, tunedGroups, tunedFile := renderRules(t, helm, t.TempDir(), tuned)
	checkRules(t, promtool, tunedFile, tunedGroups)
	byName := map[string]alertRule{}
	for _, r := range tunedGroups[0].Rules {
		byName[r.Alert] = r
		checkAlertMetrics(t, r, documented, `job="watchword"`)
	}
	if _, on := byName["WatchwordStoreThrottled"]; on || len(byName) != 11 {
		t.Errorf("with storeThrottled off: alerts %v", slices.Sorted(maps.Keys(byName)))
	}
	if r := byName["WatchwordStoreCredentialsRefused"]; r.For != "1m" || r.Labels["severity"] != "page" || !strings.HasSuffix(strings.TrimSpace(r.Expr), "> 3") {
		t.Errorf("tuned WatchwordStoreCredentialsRefused: for %q, severity %q, expr %q; want 1m, page, > 3", r.For, r.Labels["severity"], r.Expr)
	}

	for _, set := range []string{
		"metrics.prometheusRule.alerts.storeThrottled.threshold=-1",
		"metrics.prometheusRule.alerts.storeThrottled.for=5 minutes",
		"metrics.prometheusRule.alerts.storeThrotled.enabled=false",
		"metrics.prometheusRule.alerts.syncFailureRatio.threshold=2",
	} {
		cmd := exec.Command(helm, "template", "ww", chartDir, "--set", "metrics.prometheusRule.enabled=true", "--set", set)
		cmd.Env = toolEnv(t)
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("values don't meet the specifications of the schema")) {
			t.Errorf("helm template --set %s: want a refusal by values.schema.json, got %v:\n%s", set, err, out)
		}
	}
}

// checkAlertMetrics checks that every metric an alert reads is documented
// (a histogram's _count, _sum and _bucket series count as its name) or is
// up, that every watchword_ name in it is a selector, and that every
// selector carries the release's matchers.
func checkAlertMetrics(t *testing.T, r alertRule, documented []string, scope string) {
	t.Helper()
	sels := selector.FindAllStringSubmatch(r.Expr, -1)
	if len(sels) == 0 {
		t.Errorf("%s reads no metric: %s", r.Alert, r.Expr)
	}
	for _, m := range sels {
		name := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if trimmed, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(documented, trimmed) {
				name = trimmed
			}
		}
		if name != "up" && !slices.Contains(documented, name) {
			t.Errorf("%s reads %s, which the metrics table of docs/operations.md does not list", r.Alert, m[1])
		}
		if !strings.Contains(m[2], scope) {
			t.Errorf("%s selects %s{%s}, without the release's matchers %s", r.Alert, m[1], m[2], scope)
		}
	}
	for _, loc := range metricName.FindAllStringIndex(r.Expr, -1) {
		if loc[1] >= len(r.Expr) || r.Expr[loc[1]] != '{' {
			t.Errorf("%s reads %s without the release's matchers", r.Alert, r.Expr[loc[0]:loc[1]])
		}
	}
}
