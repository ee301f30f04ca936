package agent

import (
	"context"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// namespaceFile is where a pod finds its own namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// followed is the source of a target that follows an ExternalSecret by
// name: at each refresh it reads the ExternalSecret and its store, so that
// a change of either reaches the files. Only creationPolicy None is
// followed: a Secret the controller writes must not have a second writer
// of the same data, and None is how an ExternalSecret says it is meant for
// the agent.
func (a *Agent) followed(namespace, name string) func(ctx context.Context) (*v1alpha1.ExternalSecretSpec, provider.Store, string, error) {
	return func(ctx context.Context) (*v1alpha1.ExternalSecretSpec, provider.Store, string, error) {
		ns := namespace
		if ns == "" {
			b, err := os.ReadFile(namespaceFile)
			if err != nil {
				return nil, provider.Store{}, "", fmt.Errorf("kubernetes.namespace is not set and the pod's namespace file cannot be read: %w", pathless(err))
			}
			ns = strings.TrimSpace(string(b))
		}
		var es v1alpha1.ExternalSecret
		if err := a.opts.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &es); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, provider.Store{}, "", fmt.Errorf("ExternalSecret %q not found: %w", ns+"/"+name, engine.ErrNotFound)
			}
			return nil, provider.Store{}, "", fmt.Errorf("reading ExternalSecret %q: %w", ns+"/"+name, err)
		}
		if p := es.Spec.Target.CreationPolicy; p != v1alpha1.CreationPolicyNone {
			return nil, provider.Store{}, "", failure.Terminalf(failure.TargetConflict,
				"ExternalSecret %q has creationPolicy %q: the controller writes its data into a Secret, and the agent follows only an ExternalSecret whose data has no other writer; set its target.creationPolicy to None, or list the files to deliver under deliveries instead of following it",
				ns+"/"+name, string(p))
		}
		r, err := storeaccess.Resolve(ctx, a.opts.Kube, ns, es.Spec.SecretStoreRef)
		if err != nil {
			return nil, provider.Store{}, "", err
		}
		store := r.Store
		// The store is shared with nothing here, but Resolve's contract
		// says not to modify it: keep a copy of the spec.
		store.Spec = store.Spec.DeepCopy()
		// The ID changes with the store's generation, so that a changed
		// store gets a new client; what precedes @ names it in metrics.
		id := fmt.Sprintf("%s/%s/%s@%s/%d", store.Kind, store.Namespace, store.Name, r.UID, r.Generation)
		return es.Spec.DeepCopy(), store, id, nil
	}
}
