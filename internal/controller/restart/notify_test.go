package restart

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/notify"
)

// TestRotatedNamesKeysAndVersions: a notification's Secrets are the owed
// ones in name order, with the keys owed (none: any key) and the
// versions of the ExternalSecrets that write them.
func TestRotatedNamesKeysAndVersions(t *testing.T) {
	at := time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Status: v1alpha1.ExternalSecretStatus{
		TargetResourceVersion: "4711", Versions: []v1alpha1.RemoteVersion{{Key: "db/app", Version: "7"}, {Key: "db/user"}}}}
	got := rotated(map[string]Owed{"b-secret": {At: at}, "a-secret": {At: at.Add(-time.Minute), Keys: []string{"password", "user"}}},
		map[string][]*v1alpha1.ExternalSecret{"a-secret": {es}})
	if len(got) != 2 || got[0].Name != "a-secret" || got[1].Name != "b-secret" {
		t.Fatalf("secrets %+v", got)
	}
	a, b := got[0], got[1]
	if a.AnyKey || len(a.Keys) != 2 || a.Keys[0] != "password" || !a.RotatedAt.Equal(at.Add(-time.Minute)) {
		t.Errorf("a-secret %+v", a)
	}
	want := notify.Source{Name: "creds", TargetResourceVersion: "4711", Versions: []notify.Version{{Key: "db/app", Version: "7"}, {Key: "db/user"}}}
	if len(a.ExternalSecrets) != 1 || a.ExternalSecrets[0].Name != want.Name || a.ExternalSecrets[0].TargetResourceVersion != "4711" ||
		len(a.ExternalSecrets[0].Versions) != 2 || a.ExternalSecrets[0].Versions[0] != want.Versions[0] {
		t.Errorf("a-secret's sources %+v, want %+v", a.ExternalSecrets, want)
	}
	if !b.AnyKey || b.Keys != nil || b.ExternalSecrets != nil {
		t.Errorf("b-secret %+v: any key, no sources", b)
	}
}
