package externalsecret

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func TestClassifyChange(t *testing.T) {
	synced := metav1.Unix(1000, 0)
	v1 := []v1alpha1.RemoteVersion{{Key: "db", Version: "1"}, {Key: "api", Version: "7"}}
	v2 := []v1alpha1.RemoteVersion{{Key: "db", Version: "2"}, {Key: "api", Version: "7"}}
	unversioned := []v1alpha1.RemoteVersion{{Key: "db"}}
	before := &v1alpha1.ExternalSecretStatus{RefreshTime: &synced, Versions: v1}
	cases := []struct {
		name    string
		before  *v1alpha1.ExternalSecretStatus
		plan    schedule
		drifted bool
		read    []v1alpha1.RemoteVersion
		want    string
	}{
		{"first sync, even with new versions", &v1alpha1.ExternalSecretStatus{}, schedule{}, true, v2, changeCreated},
		{"spec change with new data", before, schedule{inputsChanged: true, generationChanged: true}, false, v2, changeUpdated},
		{"store change with new versions (data kept in the store's spec)", before, schedule{inputsChanged: true}, false, v2, changeRotated},
		{"store or template change, same versions", before, schedule{inputsChanged: true}, false, v1, changeUpdated},
		{"new remote version", before, schedule{}, false, v2, changeRotated},
		{"new remote version while the target was edited", before, schedule{}, true, v2, changeRotated},
		{"target edited, same versions", before, schedule{}, true, v1, changeDriftRepaired},
		{"new value from a store without versions", &v1alpha1.ExternalSecretStatus{RefreshTime: &synced, Versions: unversioned}, schedule{}, false, unversioned, changeRotated},
		{"target edited, store without versions", &v1alpha1.ExternalSecretStatus{RefreshTime: &synced, Versions: unversioned}, schedule{}, true, unversioned, changeDriftRepaired},
		{"a newly read remote object", before, schedule{}, false, append(v1[:1:1], v1alpha1.RemoteVersion{Key: "extra", Version: "1"}), changeRotated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyChange(tc.before, tc.plan, tc.drifted, tc.read); got != tc.want {
				t.Errorf("classifyChange = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestChangeMessagesNameKeysAndVersions(t *testing.T) {
	changed := changedVersions([]v1alpha1.RemoteVersion{{Key: "db", Version: "1"}, {Key: "api", Version: "7"}},
		[]v1alpha1.RemoteVersion{{Key: "db", Version: "2"}, {Key: "api", Version: "7"}})
	msg := changeMessage(changeRotated, `Secret "app"`, []string{"password"}, changed)
	for _, want := range []string{`Secret "app" rotated`, "keys changed: password", "new versions: db@2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "api@") {
		t.Errorf("message %q names an object whose version did not change", msg)
	}
	many := make([]string, 25)
	for i := range many {
		many[i] = "k" + strings.Repeat("x", i)
	}
	if got := keyList(many); !strings.HasSuffix(got, "and 15 more") {
		t.Errorf("keyList of 25 keys = %q, want it bounded", got)
	}
}

func TestRotatedKeysAreBounded(t *testing.T) {
	if got := rotatedKeys([]string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("rotatedKeys(a, b) = %v", got)
	}
	many := make([]string, maxRotatedKeys+1)
	for i := range many {
		many[i] = fmt.Sprintf("k%d", i)
	}
	if got := rotatedKeys(many); got != nil {
		t.Errorf("rotatedKeys of %d keys = %d keys, want none (any key)", len(many), len(got))
	}
	if got := rotatedKeys(many[:maxRotatedKeys]); len(got) != maxRotatedKeys {
		t.Errorf("rotatedKeys of %d keys kept %d", maxRotatedKeys, len(got))
	}
}
