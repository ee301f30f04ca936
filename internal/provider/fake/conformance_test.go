package fake

import (
	"context"
	"sync"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/pkg/conformance"
)

// specStore is a fake store whose spec the suite's seeds extend: each read
// builds the client from the spec as it is then, as a new store generation
// would.
type specStore struct {
	mu   sync.Mutex
	spec v1alpha1.FakeProvider
}

func (s *specStore) seed(_ context.Context, key string, fields map[string][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]string, len(fields))
	for k, v := range fields {
		m[k] = string(v)
	}
	s.spec.Data = append(s.spec.Data, v1alpha1.FakeProviderData{Key: key, ValueMap: m})
	return nil
}

func (s *specStore) ops(ctx context.Context) (engine.Ops, error) {
	s.mu.Lock()
	spec := *s.spec.DeepCopy()
	s.mu.Unlock()
	return Factory{}.New(ctx, provider.Store{Kind: v1alpha1.SecretStoreKind, Namespace: "ns", Name: "fake",
		Spec: &v1alpha1.SecretStoreProvider{Fake: &spec}}, nil)
}

func (s *specStore) GetSecret(ctx context.Context, ref engine.Ref) (engine.Object, error) {
	ops, err := s.ops(ctx)
	if err != nil {
		return engine.Object{}, err
	}
	return ops.Reader.GetSecret(ctx, ref)
}

func (s *specStore) List(ctx context.Context, req engine.ListRequest) (engine.ListPage, error) {
	ops, err := s.ops(ctx)
	if err != nil {
		return engine.ListPage{}, err
	}
	return ops.Lister.List(ctx, req)
}

func TestConformance(t *testing.T) {
	s := &specStore{}
	conformance.Run(t, conformance.Harness{Name: "fake", Ops: engine.Ops{Reader: s, Lister: s}, Seed: s.seed, KeepsVersions: true})
}
