package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

var me = engine.Owner{ID: "PushSecret/app/db/0000-1111"}

func publication(value string) engine.Publication {
	return engine.Publication{Fields: map[string][]byte{"password": []byte(value)}}
}

func secretIn(ns, name string, annotations, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: labels},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("theirs")}}
}

func getSecret(t *testing.T, cs *fake.Clientset, name string) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets("remote").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writes(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete" {
			n++
		}
	}
	return n
}

func TestPublishCreatesAMarkedSecret(t *testing.T) {
	cs := fake.NewClientset()
	c := newClient(cs, "remote", &identity{known: "service account \"app/pub\""})
	p := publication("v1")
	p.Labels, p.Annotations, p.Type = map[string]string{"team": "a"}, map[string]string{"note": "n"}, "kubernetes.io/basic-auth"
	if _, err := c.PutSecret(context.Background(), "db", p, me); err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, cs, "db")
	if s.Annotations[PublisherAnnotation] != me.ID || s.Labels[PublishedLabel] != "true" {
		t.Errorf("marker missing: labels %v, annotations %v", s.Labels, s.Annotations)
	}
	if s.Labels["team"] != "a" || s.Annotations["note"] != "n" || s.Type != "kubernetes.io/basic-auth" || string(s.Data["password"]) != "v1" {
		t.Errorf("published Secret is %+v", s)
	}
}

func TestPublishUnchangedWritesNothing(t *testing.T) {
	cs := fake.NewClientset()
	c := newClient(cs, "remote", &identity{})
	ctx := context.Background()
	for range 3 {
		if _, err := c.PutSecret(ctx, "db", publication("v1"), me); err != nil {
			t.Fatal(err)
		}
	}
	if n := writes(cs); n != 1 {
		t.Fatalf("%d writes for three identical publications, want 1", n)
	}
	if _, err := c.PutSecret(ctx, "db", publication("v2"), me); err != nil {
		t.Fatal(err)
	}
	if n := writes(cs); n != 2 || string(getSecret(t, cs, "db").Data["password"]) != "v2" {
		t.Fatalf("a changed publication: %d writes", n)
	}
}

func TestPublishRefusesWhatItDoesNotOwn(t *testing.T) {
	cases := []struct {
		name     string
		existing *corev1.Secret
		adopt    bool
		want     []string // fragments of the refusal; none when the write is allowed
	}{
		{name: "unmarked", existing: secretIn("remote", "db", nil, map[string]string{managedByLabel: "helm"}),
			want: []string{`Secret remote/db exists and carries no Watchword publisher marker (it is managed by "helm")`, "adopt: true"}},
		{name: "unmarked, adopted", existing: secretIn("remote", "db", nil, nil), adopt: true},
		{name: "another publisher", existing: secretIn("remote", "db", map[string]string{PublisherAnnotation: "PushSecret/other/x/2222"}, nil), adopt: true,
			want: []string{"Secret remote/db is published by PushSecret/other/x/2222"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.existing)
			c := newClient(cs, "remote", &identity{})
			owner := me
			owner.Adopt = tc.adopt
			_, err := c.PutSecret(context.Background(), "db", publication("mine"), owner)
			got := getSecret(t, cs, "db")
			if len(tc.want) == 0 {
				if err != nil || string(got.Data["password"]) != "mine" || got.Annotations[PublisherAnnotation] != me.ID {
					t.Fatalf("adoption: %v, Secret %+v", err, got)
				}
				return
			}
			if !errors.Is(err, engine.ErrNotOwned) {
				t.Fatalf("got %v, want a refusal", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "theirs") || string(got.Data["password"]) != "theirs" {
				t.Error("the refused Secret was changed, or its value named")
			}
			if err := c.DeleteSecret(context.Background(), "db", me); !errors.Is(err, engine.ErrNotOwned) {
				t.Errorf("delete of a Secret not owned: %v", err)
			}
			getSecret(t, cs, "db")
		})
	}
}

func TestDeleteOnlyWhatItOwns(t *testing.T) {
	cs := fake.NewClientset(secretIn("remote", "mine", map[string]string{PublisherAnnotation: me.ID}, nil))
	c := newClient(cs, "remote", &identity{})
	ctx := context.Background()
	if err := c.DeleteSecret(ctx, "mine", me); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("remote").Get(ctx, "mine", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("owned Secret still there: %v", err)
	}
	if err := c.DeleteSecret(ctx, "mine", me); err != nil {
		t.Fatalf("deleting what is gone: %v", err)
	}
}

func TestPublishRefusals(t *testing.T) {
	cs := fake.NewClientset(secretIn("remote", "tls", map[string]string{PublisherAnnotation: me.ID}, nil))
	cs.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db", errors.New(sentinel))
	})
	c := newClient(cs, "remote", &identity{known: `service account "app/pub"`})
	ctx := context.Background()

	_, err := c.PutSecret(ctx, "Not_A_Name", publication("v"), me)
	if class := failure.Classify(err); class.Reason != failure.RemoteNameInvalid || !class.Terminal {
		t.Errorf("invalid name: %v (%+v)", err, class)
	}
	_, err = c.PutSecret(ctx, "db", publication("v"), me)
	want := `the API server does not let service account "app/pub" create Secret "db" in namespace "remote" (verb "create"`
	if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), sentinel) {
		t.Errorf("refused create: %v", err)
	}
	p := publication("v")
	p.Type = "kubernetes.io/tls"
	if _, err = c.PutSecret(ctx, "tls", p, me); !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(err.Error(), "type cannot change") ||
		!strings.Contains(err.Error(), "set the destination's metadata.type to Opaque") {
		t.Errorf("changed type: %v", err)
	}
}

// TestPublishingOverATokenSaysToChooseAnotherName: a destination that
// names a service-account token Secret is refused, with or without adopt,
// by a message that says what can be done: metadata.type cannot name a
// token type (the API refuses it), so the message does not suggest it.
func TestPublishingOverATokenSaysToChooseAnotherName(t *testing.T) {
	token := secretIn("remote", "builder-token", nil, nil)
	token.Type = corev1.SecretTypeServiceAccountToken
	cs := fake.NewClientset(token)
	c := newClient(cs, "remote", &identity{known: `service account "app/pub"`})
	for _, owner := range []engine.Owner{me, {ID: me.ID, Adopt: true}} {
		_, err := c.PutSecret(context.Background(), "builder-token", publication("v"), owner)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !errors.Is(err, engine.ErrNotSupported) || !strings.Contains(msg, "change the destination's name") ||
			strings.Contains(msg, "metadata.type") || strings.Contains(msg, "adopt") {
			t.Errorf("adopt %v: %v; want a refusal that says to publish to another name", owner.Adopt, err)
		}
	}
	if n := writes(cs); n != 0 {
		t.Errorf("%d writes to the token Secret, want none", n)
	}
}

func TestPublishRemovesOnlyTheMetadataItTookOut(t *testing.T) {
	cs := fake.NewClientset()
	c := newClient(cs, "remote", &identity{known: "service account \"app/pub\""})
	p := publication("v1")
	p.Labels, p.Annotations = map[string]string{"team": "a", "tier": "db"}, map[string]string{"note": "n"}
	if _, err := c.PutSecret(context.Background(), "db", p, me); err != nil {
		t.Fatal(err)
	}
	// Someone else labels the published Secret.
	s := getSecret(t, cs, "db")
	s.Labels["theirs"] = "x"
	if _, err := cs.CoreV1().Secrets("remote").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Labels, p.Annotations = map[string]string{"team": "b"}, nil
	if _, err := c.PutSecret(context.Background(), "db", p, me); err != nil {
		t.Fatal(err)
	}
	s = getSecret(t, cs, "db")
	if s.Labels["team"] != "b" || s.Labels["theirs"] != "x" || s.Labels[PublishedLabel] != "true" {
		t.Errorf("labels %v, want team=b, theirs kept and the published label", s.Labels)
	}
	if _, ok := s.Labels["tier"]; ok {
		t.Errorf("label tier, taken out of the publication, stays: %v", s.Labels)
	}
	if _, ok := s.Annotations["note"]; ok || s.Annotations[PublisherAnnotation] != me.ID {
		t.Errorf("annotations %v, want note removed and the marker kept", s.Annotations)
	}
}

func TestAdoptionIgnoresAMetadataRecordItDidNotWrite(t *testing.T) {
	planted := secretIn("remote", "db", map[string]string{metadataAnnotation: `{"labels":["theirs"],"annotations":["note"]}`, "note": "keep"},
		map[string]string{"theirs": "x"})
	cs := fake.NewClientset(planted)
	c := newClient(cs, "remote", &identity{known: "service account \"app/pub\""})
	adopter := me
	adopter.Adopt = true
	if _, err := c.PutSecret(context.Background(), "db", publication("v1"), adopter); err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, cs, "db")
	if s.Labels["theirs"] != "x" || s.Annotations["note"] != "keep" {
		t.Errorf("adoption removed labels %v / annotations %v that a record it did not write named", s.Labels, s.Annotations)
	}
}
