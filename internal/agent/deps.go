package agent

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
)

// fileDeps gives a provider its credentials from files instead of
// Kubernetes objects: a Secret or ConfigMap key named in a provider block
// is the file that credentials map it to, and a service account's token
// is the projected token file (the kubelet keeps it fresh). The agent
// reads no Kubernetes Secret.
type fileDeps struct {
	creds     []Credential
	tokenFile string
	local     *rest.Config
}

func (d *fileDeps) file(kind, name, key string) ([]byte, error) {
	for _, c := range d.creds {
		if c.Key == key && ((kind == "Secret" && c.Secret == name) || (kind == "ConfigMap" && c.ConfigMap == name)) {
			b, err := os.ReadFile(c.File)
			if err != nil {
				return nil, fmt.Errorf("reading the file of %s %q key %q: %w: %w", kind, name, key, pathless(err), engine.ErrInvalidConfig)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("the store names %s %q key %q, and no entry of credentials maps it to a file: %w", kind, name, key, engine.ErrInvalidConfig)
}

func (d *fileDeps) SecretValue(_ context.Context, sel v1alpha1.SecretKeySelector) ([]byte, error) {
	b, err := d.file("Secret", sel.Name, sel.Key)
	return trimNewline(b), err
}

func (d *fileDeps) ConfigMapValue(_ context.Context, _, name, key string) ([]byte, error) {
	return d.file("ConfigMap", name, key)
}

// ServiceAccountToken reads the projected token; its lifetime is left to
// the kubelet, which rewrites the file before it expires.
func (d *fileDeps) ServiceAccountToken(_ context.Context, _ v1alpha1.ServiceAccountSelector) (string, int64, error) {
	b, err := os.ReadFile(d.tokenFile)
	if err != nil {
		return "", 0, fmt.Errorf("reading the service-account token file: %w: %w", pathless(err), engine.ErrPermissionDenied)
	}
	return string(trimNewline(b)), 0, nil
}

func (d *fileDeps) LocalConfig() *rest.Config { return d.local }
