package integration

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// TestSyncErrorMetricCarriesConditionReason: a retried failure is counted
// under the reason its condition shows, as a terminal one is.
//
// Serial: asserts that the suite operator's global sync error counter for
// reason "Error" does not move, which other tests' failures could move.
func TestSyncErrorMetricCarriesConditionReason(t *testing.T) {
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + sentinel + `"}`})
	retried := testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("PropertyError"))
	terminal := testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("TemplateError"))
	generic := testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("Error"))
	newES(t, ns, "missing-prop", "store", withData("user", "db", "user"))
	waitCondition(t, ns, "missing-prop", "PropertyError")
	eventually(t, wait, func() (bool, string) {
		return testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("PropertyError")) > retried,
			"watchword_sync_errors_total{reason=\"PropertyError\"} did not grow"
	})
	newES(t, ns, "bad-template", "store", withData("password", "db", "password"), withTemplate(&v1alpha1.ExternalSecretTemplate{
		Data: map[string]string{"password": "{{ .data.password | nosuchfunc }}"}}))
	waitCondition(t, ns, "bad-template", "TemplateError")
	eventually(t, wait, func() (bool, string) {
		return testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("TemplateError")) > terminal,
			"watchword_sync_errors_total{reason=\"TemplateError\"} did not grow"
	})
	if testutil.ToFloat64(metrics.SyncErrors.WithLabelValues("Error")) != generic {
		t.Error(`a failure was counted under reason="Error" instead of its condition reason`)
	}
}
