package awsfake

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// Deps is a provider.Deps for tests of the AWS providers: Secret keys from
// a map (changeable, as a rotated Secret is) and service-account tokens
// from a function.
type Deps struct {
	mu      sync.Mutex
	secrets map[string][]byte
	// Token returns a token for a service account with the audiences the
	// selector asks for. Nil refuses.
	Token func(ctx context.Context, sel v1alpha1.ServiceAccountSelector) (string, error)
}

// SetSecret sets the value of key of Secret name.
func (d *Deps) SetSecret(name, key string, value []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.secrets == nil {
		d.secrets = map[string][]byte{}
	}
	d.secrets[name+"/"+key] = value
}

// SecretValue is provider.Deps.
func (d *Deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.secrets[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %q has no key %q: %w", sel.Name, sel.Key, engine.ErrInvalidConfig)
	}
	return v, nil
}

// ConfigMapValue is provider.Deps; the AWS providers name no ConfigMap.
func (d *Deps) ConfigMapValue(context.Context, string, string, string) ([]byte, error) {
	return nil, fmt.Errorf("no ConfigMaps here: %w", engine.ErrInvalidConfig)
}

// ServiceAccountToken is provider.Deps.
func (d *Deps) ServiceAccountToken(ctx context.Context, sel v1alpha1.ServiceAccountSelector) (string, int64, error) {
	if d.Token == nil {
		return "", 0, fmt.Errorf("no tokens here: %w", engine.ErrPermissionDenied)
	}
	t, err := d.Token(ctx, sel)
	return t, 3600, err
}

// LocalConfig is provider.Deps.
func (d *Deps) LocalConfig() *rest.Config { return &rest.Config{} }
