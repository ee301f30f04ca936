package providertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

// forgetful names the CA Secret of the kubernetes block and nothing else.
type forgetful struct{}

func (forgetful) Validate(provider.Store) error { return nil }
func (forgetful) Refs(s provider.Store) []provider.ObjectRef {
	return []provider.ObjectRef{provider.SecretKeyRef("kubernetes.server.caSecretRef", *s.Spec.Kubernetes.Server.CASecretRef)}
}
func (forgetful) New(context.Context, provider.Store, provider.Deps) (engine.Ops, error) {
	return engine.Ops{}, nil
}

// recorder collects failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestRefsAreCompleteCatchesAForgottenField(t *testing.T) {
	rec := &recorder{TB: t}
	RefsAreComplete(rec, forgetful{}, "kubernetes")
	// Per run (the block has no CAProvider, so both runs agree): the
	// bearer token, the client certificate and key, the service account.
	if len(rec.errors) != 8 {
		t.Fatalf("got %d failures, want 8: %q", len(rec.errors), rec.errors)
	}
}
