package pushsecret

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

const secretValue = "do-not-show-this"

func push(data ...v1alpha1.PushSecretData) *v1alpha1.PushSecret {
	return &v1alpha1.PushSecret{Spec: v1alpha1.PushSecretSpec{SecretName: "src", Data: data}}
}

func TestSelectData(t *testing.T) {
	source := map[string][]byte{"user": []byte("u"), "password": []byte(secretValue)}
	cases := []struct {
		name    string
		ps      *v1alpha1.PushSecret
		want    map[string]string
		reason  failure.Reason
		message []string
	}{
		{name: "every key", ps: push(), want: map[string]string{"user": "u", "password": secretValue}},
		{name: "selected, renamed", ps: push(v1alpha1.PushSecretData{SecretKey: "password", RemoteKey: "db-password"}),
			want: map[string]string{"db-password": secretValue}},
		{name: "selected, own name", ps: push(v1alpha1.PushSecretData{SecretKey: "user"}), want: map[string]string{"user": "u"}},
		{name: "missing", ps: push(v1alpha1.PushSecretData{SecretKey: "user"}, v1alpha1.PushSecretData{SecretKey: "token"}, v1alpha1.PushSecretData{SecretKey: "cert"}),
			reason: failure.SourceKeyMissing, message: []string{`Secret "src" has no key "token", "cert"`, "the Secret has keys password, user"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, keys, err := selectData(tc.ps, source)
			if tc.reason != "" {
				class := failure.Classify(err)
				if class.Reason != tc.reason || !class.Terminal {
					t.Fatalf("got %v (%+v), want a terminal %s", err, class, tc.reason)
				}
				for _, m := range tc.message {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("%q lacks %q", err, m)
					}
				}
				if strings.Contains(err.Error(), secretValue) {
					t.Error("the error names a value")
				}
				return
			}
			if err != nil || len(got) != len(tc.want) || len(keys) != len(tc.want) {
				t.Fatalf("got %v %v %v", keys, err, len(got))
			}
			for k, v := range tc.want {
				if string(got[k]) != v {
					t.Errorf("key %s differs", k)
				}
			}
		})
	}
}

func TestHashTellsPublicationsApart(t *testing.T) {
	base := engine.Publication{Fields: map[string][]byte{"a": []byte("1"), "b": []byte("2")}}
	h := hashOf("uid", "store/1", base)
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("hash %q", h)
	}
	same := engine.Publication{Fields: map[string][]byte{"b": []byte("2"), "a": []byte("1")}}
	if hashOf("uid", "store/1", same) != h {
		t.Error("the same publication hashes differently")
	}
	labelled := base
	labelled.Labels = map[string]string{"team": "a"}
	// A split that moves bytes between a key and its value must not
	// collide.
	shifted := engine.Publication{Fields: map[string][]byte{"a1": []byte(""), "b": []byte("2")}}
	for name, other := range map[string]string{
		"another owner":      hashOf("uid2", "store/1", base),
		"another store":      hashOf("uid", "store/2", base),
		"a changed value":    hashOf("uid", "store/1", engine.Publication{Fields: map[string][]byte{"a": []byte("1"), "b": []byte("3")}}),
		"labels":             hashOf("uid", "store/1", labelled),
		"a shifted boundary": hashOf("uid", "store/1", shifted),
	} {
		if other == h {
			t.Errorf("%s does not change the hash", name)
		}
	}
}

func TestStoreRefDefaults(t *testing.T) {
	if got := storeRef(v1alpha1.PushSecretDestination{Name: "x"}); got != (v1alpha1.StoreRef{Name: "default", Kind: "SecretStore"}) {
		t.Errorf("no configRef: %+v", got)
	}
	if got := storeRef(v1alpha1.PushSecretDestination{ConfigRef: &v1alpha1.StoreRef{Name: "v"}}); got.Kind != "SecretStore" || got.Name != "v" {
		t.Errorf("configRef without kind: %+v", got)
	}
}

func TestRemovedDestinations(t *testing.T) {
	ps := &v1alpha1.PushSecret{Spec: v1alpha1.PushSecretSpec{Destinations: []v1alpha1.PushSecretDestination{
		{Name: "kept"}, {Name: "moved", ConfigRef: &v1alpha1.StoreRef{Name: "vault"}},
	}}}
	ps.Status.Destinations = []v1alpha1.PushSecretDestinationStatus{
		{Name: "kept", StoreKind: "SecretStore", StoreName: "default"},
		{Name: "moved", StoreKind: "SecretStore", StoreName: "default"},
		{Name: "renamed", StoreKind: "SecretStore", StoreName: "default"},
	}
	got := removed(ps)
	if len(got) != 2 || got[0].Name != "moved" || got[1].Name != "renamed" {
		t.Errorf("removed = %+v", got)
	}
}

func TestNextCheck(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	checked := metav1.NewTime(now.Add(-50 * time.Minute))
	s := &scope{ps: &v1alpha1.PushSecret{}, now: now,
		destinations: []v1alpha1.PushSecretDestinationStatus{{CheckedTime: &checked}, {}}}
	if got := nextCheck(s); got != 10*time.Minute {
		t.Errorf("next check in %s, want 10m (the default interval is 1h)", got)
	}
	s.ps.Spec.RefreshInterval = &metav1.Duration{}
	if got := nextCheck(s); got != 0 {
		t.Errorf("refreshInterval 0: next check in %s, want none", got)
	}
}
