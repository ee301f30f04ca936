package externalsecret

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Template Secrets (templateFrom[].secret) are watched by name, as Merge
// targets are: their resourceVersions are inputs of a sync, so a change
// renders the target again, and their creation queues an ExternalSecret
// that waited for one.

func templateSecretNotFound(es *v1alpha1.ExternalSecret, name string) error {
	return failure.Terminalf(failure.TemplateNotFound,
		"template Secret %q not found in namespace %q (spec.target.template.templateFrom)", name, es.Namespace)
}

// templateSecretVersions tells the resourceVersions of the templateFrom
// Secrets from their watches by name.
func (r *Reconciler) templateSecretVersions(ctx context.Context, es *v1alpha1.ExternalSecret) (string, error) {
	var versions []string
	for _, name := range templateSecretNames(es) {
		if !isConfigMap(es) && name == targetindex.Name(es) {
			// Each write of the target would be a new input, rendered
			// into the next write: a loop that feeds its own output.
			return "", failure.Terminalf(failure.TemplateError,
				"templateFrom Secret %q is this ExternalSecret's own target: a template cannot read what it writes; keep the templates in another Secret or a ConfigMap (the target keeps its data)", name)
		}
		rv, found, err := r.Named.ResourceVersion(ctx, provider.NamespacedName{Namespace: es.Namespace, Name: name})
		if err != nil {
			return "", fmt.Errorf("watching template Secret %q: %w", name, err)
		}
		if !found {
			return "", templateSecretNotFound(es, name)
		}
		versions = append(versions, "Secret/"+name+"="+rv)
	}
	return strings.Join(versions, ","), nil
}

// addTemplateSecrets reads the templateFrom Secrets from the API server
// into sources, keeping only the items the entries name.
func (r *Reconciler) addTemplateSecrets(ctx context.Context, es *v1alpha1.ExternalSecret, sources map[string]map[string]string) error {
	wanted := map[string]map[string]bool{}
	for _, from := range es.Spec.Target.Template.TemplateFrom {
		if from.Secret == nil {
			continue
		}
		if wanted[from.Secret.Name] == nil {
			wanted[from.Secret.Name] = map[string]bool{}
		}
		for _, item := range from.Secret.Items {
			wanted[from.Secret.Name][item.Key] = true
		}
	}
	for _, name := range templateSecretNames(es) {
		var s corev1.Secret
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return templateSecretNotFound(es, name)
			}
			return fmt.Errorf("reading template Secret %q: %w", name, err)
		}
		items := map[string]string{}
		for k, v := range s.Data {
			if wanted[name][k] {
				items[k] = string(v)
			}
		}
		sources[engine.SecretSourceKey(name)] = items
	}
	return nil
}
