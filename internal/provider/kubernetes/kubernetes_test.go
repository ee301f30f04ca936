package kubernetes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
)

// sentinel stands for whatever the API server's own message holds: it must
// not reach the error.
const sentinel = "SERVER-TEXT"

// refusing is a clientset whose API server refuses every Secret read with
// err, and answers a SelfSubjectReview with user (or an error when empty).
func refusing(err error, user string) *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
	cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		if user == "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "", errors.New(sentinel))
		}
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: user}}}, nil
	})
	return cs
}

func forbidden() error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db", errors.New(sentinel))
}

func clientCertPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestRefusalNamesIdentityAndRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		who   *identity
		user  string
		wants []string
	}{
		{"service account", &identity{known: `service account "app/reader"`}, "",
			[]string{`service account "app/reader"`}},
		{"bearer token, user known to the API server", &identity{source: "the bearer token of kubernetes.auth.token"}, "alice",
			[]string{`user "alice"`, "kubernetes.auth.token"}},
		{"bearer token, user unknown", &identity{source: "the bearer token of kubernetes.auth.token"}, "",
			[]string{"the bearer token of kubernetes.auth.token"}},
		{"client certificate", certIdentity(clientCertPEM(t, "remote-reader")), "",
			[]string{`user "remote-reader"`, "kubernetes.auth.cert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(refusing(forbidden(), tc.user), "shared", tc.who)
			_, err := c.GetSecret(context.Background(), engine.Ref{Key: "db"})
			if !errors.Is(err, engine.ErrPermissionDenied) {
				t.Fatalf("got %v, want permission denied", err)
			}
			for _, want := range append(tc.wants, `get Secret "db" in namespace "shared"`, `verb "get"`, `resource "secrets"`) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not name %s", err, want)
				}
			}
			if strings.Contains(err.Error(), sentinel) {
				t.Errorf("%q repeats the API server's text", err)
			}
			// The check names the namespace it probes.
			err = c.Check(context.Background())
			if !errors.Is(err, engine.ErrPermissionDenied) || !strings.Contains(err.Error(), `get Secrets in namespace "shared"`) {
				t.Errorf("check: got %v", err)
			}
		})
	}
}

func TestRejectedCredentialsNameTheIdentity(t *testing.T) {
	err := apierrors.NewUnauthorized(sentinel)
	c := newClient(refusing(err, ""), "shared", &identity{known: `service account "app/reader"`})
	_, got := c.GetSecret(context.Background(), engine.Ref{Key: "db"})
	if !errors.Is(got, engine.ErrPermissionDenied) || !strings.Contains(got.Error(), "credentials were rejected") ||
		!strings.Contains(got.Error(), `service account "app/reader"`) || strings.Contains(got.Error(), sentinel) {
		t.Fatalf("got %v", got)
	}
}

func TestUserIsLookedUpOncePerClient(t *testing.T) {
	cs := refusing(forbidden(), "alice")
	c := newClient(cs, "shared", &identity{source: "the bearer token of kubernetes.auth.token"})
	for i := 0; i < 3; i++ {
		_, _ = c.GetSecret(context.Background(), engine.Ref{Key: "db"})
	}
	reviews := 0
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "selfsubjectreviews" {
			reviews++
		}
	}
	if reviews != 1 {
		t.Fatalf("%d SelfSubjectReviews for three refusals, want 1", reviews)
	}
}

// TestNamesNoSecretCanHaveAreTheCallersInput: a remote key that cannot name
// a Secret is refused before any call, and a read the API server refuses
// as invalid is too: both are the caller's input (a terminal
// RemoteNameInvalid that the store's gate records nothing of), never an
// outage of the store. A deletion of such a name has nothing to delete.
func TestNamesNoSecretCanHaveAreTheCallersInput(t *testing.T) {
	ctx := context.Background()
	cs := refusing(forbidden(), "")
	c := newClient(cs, "shared", &identity{known: `service account "app/reader"`})
	for _, key := range []string{"team/db", "Db", "db_1", strings.Repeat("a", 254), "-db"} {
		_, err := c.GetSecret(ctx, engine.Ref{Key: key})
		if cl := failure.Classify(err); cl.Reason != failure.RemoteNameInvalid || !cl.Terminal || !failure.CallersInput(err) || errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("%q: %v (%+v), want a terminal RemoteNameInvalid", key, err, cl)
		}
		if err := c.DeleteSecret(ctx, key, engine.Owner{ID: "PushSecret/a/p/1"}); err != nil {
			t.Errorf("deleting %q: %v, want nothing to delete", key, err)
		}
	}
	if n := len(cs.Actions()); n != 0 {
		t.Fatalf("%d calls were sent for names no Secret can have: %v", n, cs.Actions())
	}
	for _, refused := range []error{
		apierrors.NewBadRequest(sentinel),
		apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", nil),
	} {
		c := newClient(refusing(refused, ""), "shared", &identity{known: `service account "app/reader"`})
		_, err := c.GetSecret(ctx, engine.Ref{Key: "db"})
		if !failure.CallersInput(err) || !strings.Contains(err.Error(), `Secret shared/db`) || strings.Contains(err.Error(), sentinel) {
			t.Errorf("a read refused as invalid: %v", err)
		}
	}
}
