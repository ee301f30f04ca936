package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestFreshnessSumsTheSourcesByStore(t *testing.T) {
	removeA := AddFreshnessSource(func() []StoreFreshness {
		return []StoreFreshness{
			{StoreKind: "SecretStore", Store: "app/vault", OldestAge: 90 * time.Second, Overdue: 1, Count: 10},
			{StoreKind: "ClusterSecretStore", Store: "shared", OldestAge: 30 * time.Second, Count: 5},
		}
	})
	removeB := AddFreshnessSource(func() []StoreFreshness {
		return []StoreFreshness{{StoreKind: "SecretStore", Store: "app/vault", OldestAge: 200 * time.Second, Overdue: 2, Count: 3}}
	})
	want := `
# HELP watchword_store_overdue_externalsecrets ExternalSecrets of the store whose last successful refresh is more than two refresh intervals old.
# TYPE watchword_store_overdue_externalsecrets gauge
watchword_store_overdue_externalsecrets{store="app/vault",store_kind="SecretStore"} 3
watchword_store_overdue_externalsecrets{store="shared",store_kind="ClusterSecretStore"} 0
# HELP watchword_store_oldest_refresh_age_seconds Age of the oldest successful refresh among the ExternalSecrets with a periodic refresh that read from the store (one never synced counts from its creation).
# TYPE watchword_store_oldest_refresh_age_seconds gauge
watchword_store_oldest_refresh_age_seconds{store="app/vault",store_kind="SecretStore"} 200
watchword_store_oldest_refresh_age_seconds{store="shared",store_kind="ClusterSecretStore"} 30
`
	if err := testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(want),
		"watchword_store_overdue_externalsecrets", "watchword_store_oldest_refresh_age_seconds"); err != nil {
		t.Fatal(err)
	}
	removeA()
	removeB()
	// Without sources, no series at all.
	if n, err := testutil.GatherAndCount(crmetrics.Registry, "watchword_store_overdue_externalsecrets"); err != nil || n != 0 {
		t.Fatalf("series after the sources were removed: %d, %v", n, err)
	}
}
