package secretstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider"
)

// dependency is an object of the cluster that a store needs to exist.
type dependency struct {
	// Kind is Secret, ConfigMap or ServiceAccount.
	Kind, Namespace, Name string
}

func (d dependency) String() string { return fmt.Sprintf("%s %q", d.Kind, d.Namespace+"/"+d.Name) }

var (
	secretSelectorType    = reflect.TypeOf(v1alpha1.SecretKeySelector{})
	configMapSelectorType = reflect.TypeOf(v1alpha1.ConfigMapKeySelector{})
	accountSelectorType   = reflect.TypeOf(v1alpha1.ServiceAccountSelector{})
	caProviderType        = reflect.TypeOf(v1alpha1.CAProvider{})
)

// dependencies lists the Secrets, ConfigMaps and service accounts that a
// store's provider block names, wherever they sit in it, in the order of the
// block, each once, with its namespace resolved as the store's client
// resolves it. A reference that breaks the namespace rules (a SecretStore
// naming another namespace, a ClusterSecretStore naming none) is left out:
// it is a configuration error to fix, not an object to wait for.
func dependencies(store provider.Store) []dependency {
	var out []dependency
	seen := map[dependency]bool{}
	add := func(kind, ns, name string) {
		switch {
		case store.Cluster() && ns == "":
			return
		case !store.Cluster() && ns != "" && ns != store.Namespace:
			return
		case !store.Cluster():
			ns = store.Namespace
		}
		d := dependency{Kind: kind, Namespace: ns, Name: name}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			switch v.Type() {
			case secretSelectorType:
				s := v.Interface().(v1alpha1.SecretKeySelector)
				add("Secret", s.Namespace, s.Name)
			case configMapSelectorType:
				s := v.Interface().(v1alpha1.ConfigMapKeySelector)
				add("ConfigMap", s.Namespace, s.Name)
			case accountSelectorType:
				s := v.Interface().(v1alpha1.ServiceAccountSelector)
				add("ServiceAccount", s.Namespace, s.Name)
			case caProviderType:
				s := v.Interface().(v1alpha1.CAProvider)
				add(s.Type, s.Namespace, s.Name)
			default:
				for i := 0; i < v.NumField(); i++ {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	if store.Spec != nil {
		walk(reflect.ValueOf(store.Spec))
	}
	return out
}

// missing lists, for messages, the dependencies that do not exist, and the
// namespaces of a ClusterSecretStore's dependencies that do not exist. It
// reads metadata only (never a Secret's data) from the API server, so that
// an object created a moment ago is seen.
func missing(ctx context.Context, c client.Reader, store provider.Store, deps []dependency) ([]string, error) {
	var out []string
	var errs []error
	namespaces := map[string]bool{} // namespace -> exists
	for _, d := range deps {
		if store.Cluster() {
			exists, checked := namespaces[d.Namespace]
			if !checked {
				var err error
				exists, err = found(ctx, c, "Namespace", "", d.Namespace)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				namespaces[d.Namespace] = exists
				if !exists {
					out = append(out, fmt.Sprintf("namespace %q", d.Namespace))
				}
			}
			if !exists {
				continue
			}
		}
		exists, err := found(ctx, c, d.Kind, d.Namespace, d.Name)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !exists:
			out = append(out, d.String())
		}
	}
	return out, errors.Join(errs...)
}

// found tells whether a core object exists, reading its metadata alone.
func found(ctx context.Context, c client.Reader, kind, namespace, name string) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	what := fmt.Sprintf("%s %q", kind, strings.TrimPrefix(namespace+"/"+name, "/"))
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		// Only the API server's reason: its text may repeat what it refused.
		return false, fmt.Errorf("checking that %s exists: %s", what, reason)
	}
	return false, fmt.Errorf("checking that %s exists: %w", what, err)
}

// listed joins names for a message: `A`, `A and B`, `A, B and C`.
func listed(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// RetryBackoff is how the work queue tries again a store that waits for
// something a change in the cluster can fix: from one second, doubling up
// to 100 seconds, each delay stretched by up to a fifth at random (so at
// most two minutes) so that stores waiting for the same object do not retry
// in step. A store that becomes valid forgets its delay.
func RetryBackoff() workqueue.TypedRateLimiter[reconcile.Request] {
	return jittered{workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 100*time.Second)}
}

// jittered adds jitter to the delays of an exponential rate limiter; the
// work queue's own limiters have none.
type jittered struct {
	workqueue.TypedRateLimiter[reconcile.Request]
}

func (j jittered) When(item reconcile.Request) time.Duration {
	return wait.Jitter(j.TypedRateLimiter.When(item), 0.2)
}
