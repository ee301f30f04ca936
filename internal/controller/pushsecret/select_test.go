package pushsecret

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/publishing"
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
			got, keys, err := selectData(tc.ps, "src", source)
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

func TestExpandSelected(t *testing.T) {
	ps := &v1alpha1.PushSecret{Spec: v1alpha1.PushSecretSpec{
		SecretSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"publish": "yes"}},
		Destinations: []v1alpha1.PushSecretDestination{
			{Name: "app-{{ .secretName }}"},
			{Name: "{{.secretName}}"},
			{Name: "{{ .secretName }}", ConfigRef: &v1alpha1.StoreRef{Name: "other"}},
		}}}
	sources := []*origin{{name: "db"}, {name: "app-db"}}
	targets := expand(ps, sources)
	var names []string
	var collision error
	for _, tg := range targets {
		names = append(names, publishing.StoreRef(tg.dest).Name+":"+tg.dest.Name)
		if tg.err != nil {
			if collision != nil {
				t.Fatalf("two refused targets: %v and %v", collision, tg.err)
			}
			collision = tg.err
			if tg.src != nil {
				t.Error("a refused collision keeps a source whose data could be written")
			}
		}
	}
	want := []string{"default:app-db", "default:app-app-db", "default:db", "other:db", "other:app-db"}
	if !slices.Equal(names, want) {
		t.Errorf("targets %v, want %v", names, want)
	}
	if class := failure.Classify(collision); class.Reason != failure.RemoteNameCollision || !class.Terminal {
		t.Fatalf("collision: got %v, want a terminal RemoteNameCollision", collision)
	}
	for _, m := range []string{`Secret "db" (destination "app-{{ .secretName }}")`, `Secret "app-db" (destination "{{.secretName}}")`, `remote secret "app-db"`} {
		if !strings.Contains(collision.Error(), m) {
			t.Errorf("%q lacks %q", collision, m)
		}
	}
}
