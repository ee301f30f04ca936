// Package fakedeps is a provider.Deps for the tests of providers that run
// against a loopback fake of their service: Secret keys and ConfigMap keys
// from maps (changeable, as a rotated Secret is), and no service-account
// tokens. A fake whose provider needs more (a token issuer) wraps it.
package fakedeps

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// Deps is the provider.Deps. The zero value holds nothing and is ready to
// use; it is safe for concurrent use.
type Deps struct {
	mu         sync.Mutex
	secrets    map[string][]byte
	configMaps map[string][]byte
	// Reads counts the Secret and ConfigMap keys read.
	Reads int
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

// SetConfigMap sets the value of key of ConfigMap name.
func (d *Deps) SetConfigMap(name, key string, value []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.configMaps == nil {
		d.configMaps = map[string][]byte{}
	}
	d.configMaps[name+"/"+key] = value
}

// SecretValue is provider.Deps.
func (d *Deps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Reads++
	v, ok := d.secrets[sel.Name+"/"+sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %q has no key %q: %w", sel.Name, sel.Key, engine.ErrInvalidConfig)
	}
	return v, nil
}

// ConfigMapValue is provider.Deps.
func (d *Deps) ConfigMapValue(_ context.Context, _, name, key string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Reads++
	v, ok := d.configMaps[name+"/"+key]
	if !ok {
		return nil, fmt.Errorf("config map %q has no key %q: %w", name, key, engine.ErrInvalidConfig)
	}
	return v, nil
}

// ServiceAccountToken is provider.Deps; it refuses.
func (d *Deps) ServiceAccountToken(context.Context, v1alpha1.ServiceAccountSelector) (string, int64, error) {
	return "", 0, fmt.Errorf("no service-account tokens here: %w", engine.ErrPermissionDenied)
}

// LocalConfig is provider.Deps.
func (d *Deps) LocalConfig() *rest.Config { return &rest.Config{} }
