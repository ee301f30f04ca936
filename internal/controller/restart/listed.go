package restart

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// The ExternalSecret side of the opt-in: spec.target.restartWorkloads
// lists workloads to restart when the target rotates. Listed workloads
// carry no label, so they are not in the cache: they are read from the
// API server by name when an ExternalSecret listing them changes or
// rotates, and when a restart they owe is due.

// IndexListed indexes ExternalSecrets by the workloads they list, as
// "Kind/name".
const IndexListed = "watchword.restartWorkloads"

// Event reasons on an ExternalSecret whose list names a workload that
// cannot be restarted.
const (
	// ReasonWorkloadNotFound: a listed workload does not exist.
	ReasonWorkloadNotFound = "RestartWorkloadNotFound"
	// ReasonWorkloadUnsupported: a listed kind is not served here.
	ReasonWorkloadUnsupported = "RestartWorkloadUnsupported"
)

// relookMissing is how often the Lister looks again for a workload that
// is listed but missing, to tell when it is no longer missing.
const relookMissing = 30 * time.Second

// relookListed is how often a restart controller looks again for a
// workload that is listed but missing: the fallback, as its creation is
// watched for (arrivals.go).
const relookListed = 5 * time.Minute

func listedKey(kind, name string) string { return kind + "/" + name }

func listedKeys(o client.Object) []string {
	var out []string
	for _, w := range o.(*v1alpha1.ExternalSecret).Spec.Target.RestartWorkloads {
		out = append(out, listedKey(string(w.Kind), w.Name))
	}
	return out
}

// listChanged passes ExternalSecrets with a list whose list, target or
// last rotation changed.
var listChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		return len(e.Object.(*v1alpha1.ExternalSecret).Spec.Target.RestartWorkloads) > 0
	},
	DeleteFunc: func(e event.DeleteEvent) bool {
		return len(e.Object.(*v1alpha1.ExternalSecret).Spec.Target.RestartWorkloads) > 0
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, after := e.ObjectOld.(*v1alpha1.ExternalSecret), e.ObjectNew.(*v1alpha1.ExternalSecret)
		if len(before.Spec.Target.RestartWorkloads) == 0 && len(after.Spec.Target.RestartWorkloads) == 0 {
			return false
		}
		return !slices.Equal(before.Spec.Target.RestartWorkloads, after.Spec.Target.RestartWorkloads) ||
			!before.Status.LastRotationTime.Equal(after.Status.LastRotationTime) || targetindex.Name(before) != targetindex.Name(after)
	},
}

// listed are the workloads of this kind that the ExternalSecret lists.
func (r *Reconciler) listed(_ context.Context, o client.Object) []reconcile.Request {
	es := o.(*v1alpha1.ExternalSecret)
	var out []reconcile.Request
	for _, w := range es.Spec.Target.RestartWorkloads {
		if string(w.Kind) == r.kind.name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: es.Namespace, Name: w.Name}})
		}
	}
	return out
}

// listers are the ExternalSecrets that list the workload.
func (r *Reconciler) listers(ctx context.Context, ref Ref) ([]*v1alpha1.ExternalSecret, error) {
	var list v1alpha1.ExternalSecretList
	if err := r.Client.List(ctx, &list, client.InNamespace(ref.Namespace), client.MatchingFields{IndexListed: listedKey(ref.Kind, ref.Name)}); err != nil {
		return nil, fmt.Errorf("listing the ExternalSecrets that list %s: %w", ref, err)
	}
	out := make([]*v1alpha1.ExternalSecret, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// fetch reads a workload from the cache of its kind, which holds those
// with the label, or, for one an ExternalSecret lists, from the API
// server.
func (r *Reconciler) fetch(ctx context.Context, kindName string, key client.ObjectKey, obj client.Object, listed bool) error {
	cached, ok := r.readers.Load(kindName)
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	err := cached.(client.Reader).Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && listed && r.APIReader != nil {
		return r.APIReader.Get(ctx, key, obj)
	}
	return err
}

// addListed adds the targets of the ExternalSecrets that list a workload
// to what it consumes: as its pod template uses them, or whole.
func addListed(used map[string]Usage, listers []*v1alpha1.ExternalSecret, spec *corev1.PodSpec) {
	refs := TemplateSecrets(spec)
	for _, es := range listers {
		name := targetindex.Name(es)
		u := Usage{Whole: true}
		if refs[name] != nil {
			u = *refs[name]
		}
		prev, ok := used[name]
		switch {
		case !ok:
			used[name] = u
		case prev.Whole || u.Whole:
			used[name] = Usage{Whole: true}
		default:
			for k := range u.Keys {
				prev.addKey(k)
			}
			used[name] = prev
		}
	}
}

// Lister checks the lists of ExternalSecrets: a listed workload that does
// not exist, or of a kind not served in the cluster (Rollout without Argo
// Rollouts), gets a Warning event on the ExternalSecret, once per
// workload and problem. Syncing is not its business and goes on. It
// checks only the ExternalSecrets its class serves (those whose store
// names its class; a missing store counts as the default class's), so
// that operators of several classes in one cluster warn once, not once
// each.
type Lister struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Class is this instance's --controller-class.
	Class string
	// Rollouts tells whether the cluster serves Argo Rollouts.
	Rollouts func() bool
	warned   sync.Map
}

// groupVersions are where the listed kinds are served.
var groupVersions = map[v1alpha1.WorkloadKind]schema.GroupVersion{
	v1alpha1.WorkloadDeployment:  {Group: "apps", Version: "v1"},
	v1alpha1.WorkloadStatefulSet: {Group: "apps", Version: "v1"},
	v1alpha1.WorkloadDaemonSet:   {Group: "apps", Version: "v1"},
	v1alpha1.WorkloadRollout:     {Group: "argoproj.io", Version: "v1alpha1"},
}

// SetupWithManager registers the Lister.
func (l *Lister) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("restart-listing").
		For(&v1alpha1.ExternalSecret{}, builder.WithPredicates(listChanged)).
		Complete(l)
}

// Reconcile checks one ExternalSecret's list.
func (l *Lister) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var es v1alpha1.ExternalSecret
	if err := l.Client.Get(ctx, req.NamespacedName, &es); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(es.Spec.Target.RestartWorkloads) == 0 {
		// A list just emptied: nothing to check, no store to resolve, and
		// no relook to schedule.
		return ctrl.Result{}, nil
	}
	class, resolved, err := l.storeClass(ctx, &es)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case class != l.Class && !resolved:
		// The store may yet appear, naming this class.
		return ctrl.Result{RequeueAfter: relookMissing}, nil
	case class != l.Class:
		return ctrl.Result{}, nil
	}
	var result ctrl.Result
	for _, w := range es.Spec.Target.RestartWorkloads {
		key := string(es.UID) + "|" + listedKey(string(w.Kind), w.Name)
		reason, msg, err := l.check(ctx, es.Namespace, w)
		if err != nil {
			return ctrl.Result{}, err
		}
		if reason == "" {
			l.warned.Delete(key)
			continue
		}
		result.RequeueAfter = relookMissing
		if prev, ok := l.warned.Swap(key, reason); !ok || prev != reason {
			l.Recorder.Event(&es, corev1.EventTypeWarning, reason, msg)
		}
	}
	return result, nil
}

// storeClass is the controller class of the ExternalSecret's store, as
// the ExternalSecret controller decides whether it serves it: a store that
// cannot be used (missing, refused to the namespace, a ClusterSecretStore
// to a namespaced operator) counts as the default class's, which reports
// it; resolved is false then.
func (l *Lister) storeClass(ctx context.Context, es *v1alpha1.ExternalSecret) (class string, resolved bool, err error) {
	store, err := storeaccess.Resolve(ctx, l.Client, es.Namespace, es.Spec.SecretStoreRef)
	switch {
	case err == nil:
		return store.Controller, true, nil
	case failure.Terminal(err):
		return "", false, nil
	default:
		return "", false, err
	}
}

// check tells what is wrong with a listed workload, if anything. It
// reads only the workload's metadata.
func (l *Lister) check(ctx context.Context, ns string, w v1alpha1.WorkloadReference) (reason, msg string, err error) {
	gv := groupVersions[w.Kind]
	gvk := gv.WithKind(string(w.Kind))
	if w.Kind == v1alpha1.WorkloadRollout && !l.Rollouts() {
		return ReasonWorkloadUnsupported, fmt.Sprintf("spec.target.restartWorkloads lists %s %q, but the cluster does not serve %s (%s): install it, or remove the entry; syncing goes on",
			w.Kind, w.Name, gvk.Kind, gv), nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	err = l.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: w.Name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return ReasonWorkloadNotFound, fmt.Sprintf("spec.target.restartWorkloads lists %s %q, which does not exist in namespace %s: create it or fix the name; it is restarted for rotations once it exists, syncing goes on",
			w.Kind, w.Name, ns), nil
	case err != nil:
		return "", "", fmt.Errorf("reading %s %s/%s: %w", w.Kind, ns, w.Name, err)
	}
	return "", "", nil
}
