// Package clusterfanout reconciles the cluster-wide kinds that stamp one
// namespaced object into each selected namespace: ClusterExternalSecret
// (an ExternalSecret each) and ClusterPushSecret (a PushSecret each).
//
// A stamped object is owned by its cluster object (a controller owner
// reference, so that it goes with it, and a label and an annotation that
// name it). It is created in a namespace that starts to match, updated
// when the cluster object's spec changes, and deleted from a namespace
// that stops matching. An object of the same name that the cluster object
// does not own is never taken over or written: that namespace is listed
// in status.failedNamespaces instead.
//
// Every stamped ExternalSecret reads through the operator's shared read
// cache, keyed by store and remote key, so N namespaces reading the same
// K keys of a ClusterSecretStore cost about K reads per refresh window,
// not N×K (docs/benchmark.md).
//
// A reconcile is the list of steps in fanOutSteps, over one scope.
package clusterfanout

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/steps"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// Labels and annotations on stamped objects.
const (
	// StampedByLabel holds the name of the cluster object that stamped an
	// object, when the name fits a label value (63 characters).
	StampedByLabel = "watchword.io/stamped-by"
	// StampedByAnnotation holds "<Kind>/<name>" of that cluster object.
	StampedByAnnotation = "watchword.io/stamped-by"
	// HashAnnotation holds the hash of what the cluster object stamped
	// (spec, labels, annotations): a stamp whose hash is current is not
	// written again.
	HashAnnotation = "watchword.io/stamp-hash"
)

// defaultRefresh is how often the namespaces are listed again when the
// spec leaves refreshTime out.
const defaultRefresh = time.Hour

// maxFailed is the most failedNamespaces the status lists.
const maxFailed = 1000

// Reconciler reconciles the cluster objects of one Kind.
type Reconciler struct {
	// Client reads from the cache and writes to the API server.
	Client client.Client
	Kind   Kind
	// Class is this instance's --controller-class: a cluster object is
	// served by the instance of its store's class (the default instance
	// for a namespaced SecretStore or a store that does not exist).
	Class string
}

// scope is one reconcile of one cluster object.
type scope struct {
	obj    client.Object
	before client.Object
	spec   Spec
	status *v1alpha1.FanOutStatus
	// hash is the hash of what every stamp gets.
	hash string

	sel      selector
	selected []string

	provisioned []string
	failed      []v1alpha1.FailedNamespace
	// unwritten is set when a stamp could not be written for a cause
	// that may pass by itself.
	unwritten bool
}

// fanOutSteps is a reconcile, in order.
var fanOutSteps = []steps.Step[*Reconciler, *scope]{
	{Name: "select", Run: (*Reconciler).selectNamespaces},
	{Name: "stamp", Run: (*Reconciler).stampAll},
	{Name: "prune", Run: (*Reconciler).pruneUnselected},
}

// Reconcile stamps one cluster object into its namespaces.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Kind.NewCluster()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the stamps
	}
	s := &scope{obj: obj, before: obj.DeepCopyObject().(client.Object), spec: r.Kind.Spec(obj), status: r.Kind.Status(obj)}
	if !r.ours(ctx, s.spec.Store) {
		return ctrl.Result{}, nil
	}
	failed, err := steps.Run(ctx, r, fanOutSteps, s)
	if err != nil && ctx.Err() == nil {
		ctrl.LoggerFrom(ctx).V(1).Info("fan-out step failed", "step", failed, "reason", failure.Classify(err).Reason)
	}
	return r.writeStatus(ctx, s, err)
}

// ours tells whether this instance serves a cluster object of store.
func (r *Reconciler) ours(ctx context.Context, ref v1alpha1.StoreRef) bool {
	if ref.Kind != v1alpha1.ClusterSecretStoreKind {
		return r.Class == ""
	}
	store, err := storeaccess.Resolve(ctx, r.Client, "", ref)
	if err != nil || store == nil {
		return r.Class == ""
	}
	return store.Controller == r.Class
}

// selectNamespaces lists the namespaces from the cache and keeps those
// the spec selects.
func (r *Reconciler) selectNamespaces(ctx context.Context, s *scope) (bool, error) {
	sel, err := compile(s.spec.Targets)
	if err != nil {
		return false, err
	}
	var list corev1.NamespaceList
	if lerr := r.Client.List(ctx, &list); lerr != nil {
		return false, fmt.Errorf("listing namespaces: %w", lerr)
	}
	s.sel, s.selected = sel, sel.selected(list.Items)
	s.hash, err = stampHash(s.spec)
	return false, err
}

// stampAll writes the stamp of every selected namespace that lacks it or
// holds an older one, and notes which namespaces failed.
func (r *Reconciler) stampAll(ctx context.Context, s *scope) (bool, error) {
	for _, ns := range s.selected {
		if reason, err := r.stamp(ctx, s, ns); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			_, msg := failure.Describe(err)
			s.failed = append(s.failed, v1alpha1.FailedNamespace{Namespace: ns, Reason: msg})
			s.unwritten = s.unwritten || !failure.Terminal(err)
		} else if reason != "" {
			s.failed = append(s.failed, v1alpha1.FailedNamespace{Namespace: ns, Reason: reason})
			s.provisioned = append(s.provisioned, ns)
		} else {
			s.provisioned = append(s.provisioned, ns)
		}
	}
	return false, nil
}

// stamp makes the stamp of namespace ns current. It returns the reason
// the namespace is not served when the stamp is in place but not Ready,
// and an error when the stamp could not be written.
func (r *Reconciler) stamp(ctx context.Context, s *scope, ns string) (notReady string, err error) {
	cur := r.Kind.NewStamp()
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.spec.Name}, cur)
	if apierrors.IsNotFound(err) {
		return "", r.create(ctx, s, ns)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s %q: %w", r.Kind.Stamped, s.spec.Name, err)
	}
	if owner := metav1.GetControllerOf(cur); owner == nil || owner.UID != s.obj.GetUID() {
		return "", failure.Terminalf(failure.TargetConflict,
			"%s %q already exists in this namespace and is not owned by %s %q; it is left as it is: rename or remove it, or set a different name in the spec",
			r.Kind.Stamped, s.spec.Name, r.Kind.Name, s.obj.GetName())
	}
	if !cur.GetDeletionTimestamp().IsZero() {
		return fmt.Sprintf("%s %q is being deleted; it is stamped again once it is gone", r.Kind.Stamped, s.spec.Name), nil
	}
	if r.stale(s, cur) {
		r.setDesired(s, cur)
		if err := r.Client.Update(ctx, cur); err != nil {
			return "", fmt.Errorf("updating %s %q: %w", r.Kind.Stamped, s.spec.Name, err)
		}
		return "", nil
	}
	if ready, known, reason := r.Kind.Ready(cur); known && !ready {
		return fmt.Sprintf("%s: %s %q is not Ready", reason, r.Kind.Stamped, s.spec.Name), nil
	}
	return "", nil
}

// stale tells whether a stamp differs from what the cluster object gives
// it: stamped from an older spec (its hash), or edited by hand (a field,
// label or annotation the cluster object sets holds another value; the
// API server's defaults do not count).
func (r *Reconciler) stale(s *scope, cur client.Object) bool {
	return cur.GetAnnotations()[HashAnnotation] != s.hash ||
		!covers(s.spec.Payload, r.Kind.StampSpec(cur)) ||
		!covers(s.spec.Metadata.Labels, cur.GetLabels()) ||
		!covers(s.spec.Metadata.Annotations, cur.GetAnnotations())
}

// create writes a new stamp into ns.
func (r *Reconciler) create(ctx context.Context, s *scope, ns string) error {
	obj := r.Kind.NewStamp()
	obj.SetNamespace(ns)
	obj.SetName(s.spec.Name)
	r.setDesired(s, obj)
	if err := controllerutil.SetControllerReference(s.obj, obj, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %s %q: %w", r.Kind.Stamped, s.spec.Name, err)
	}
	return nil
}

// setDesired sets the spec, labels and annotations the cluster object
// gives obj; labels and annotations that others set are kept.
func (r *Reconciler) setDesired(s *scope, obj client.Object) {
	r.Kind.SetSpec(s.obj, obj)
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, s.spec.Metadata.Labels)
	if name := s.obj.GetName(); len(validation.IsValidLabelValue(name)) == 0 {
		labels[StampedByLabel] = name
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, s.spec.Metadata.Annotations)
	annotations[StampedByAnnotation] = r.Kind.Name + "/" + s.obj.GetName()
	annotations[HashAnnotation] = s.hash
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
}

// pruneUnselected deletes the stamps of namespaces that are no longer
// selected, and those of an older name.
func (r *Reconciler) pruneUnselected(ctx context.Context, s *scope) (bool, error) {
	list := r.Kind.NewStampList()
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexOwner: string(s.obj.GetUID())}); err != nil {
		return false, fmt.Errorf("listing stamped %ss: %w", r.Kind.Stamped, err)
	}
	var errs []error
	for _, o := range objects(list) {
		_, selected := slices.BinarySearch(s.selected, o.GetNamespace())
		if selected && o.GetName() == s.spec.Name {
			continue
		}
		if selected && !slices.Contains(s.provisioned, o.GetNamespace()) {
			// A stamp of an older name goes only once the stamp of the
			// current name is in place: when that one could not be written
			// (an object of the name that is not ours, the API server
			// unavailable), the old one keeps its target synced.
			continue
		}
		if !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		uid := o.GetUID()
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", r.Kind.Stamped, o.GetNamespace(), o.GetName(), err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Removed a stamped object from a namespace that is no longer selected", "kind", r.Kind.Stamped, "namespace", o.GetNamespace(), "name", o.GetName())
	}
	if len(errs) > 0 {
		return false, errs[0]
	}
	return false, nil
}

// stampHash is the hash of what every stamp of spec gets.
func stampHash(spec Spec) (string, error) {
	b, err := json.Marshal(struct {
		Payload  any                      `json:"p"`
		Metadata v1alpha1.StampedMetadata `json:"m"`
	}{spec.Payload, spec.Metadata})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// writeStatus records the outcome in the status, patched once, and says
// when to look again.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	st := s.status
	gen := s.obj.GetGeneration()
	total := len(s.failed)
	var outcome conditions.Outcome
	switch {
	case err != nil:
		outcome = conditions.Outcome{Err: err}
	case total > 0:
		outcome = conditions.Outcome{Err: failure.Retryf(failure.NamespacesFailed,
			"%d of %d selected namespaces are not served; see status.failedNamespaces", total, len(s.selected))}
	default:
		outcome = conditions.Outcome{Reason: failure.Provisioned,
			Message: fmt.Sprintf("%s stamped into %d selected namespaces", r.Kind.Stamped, len(s.selected))}
	}
	if err == nil {
		// A failed step leaves the lists of the last complete reconcile.
		st.ProvisionedNamespaces = s.provisioned
		slices.SortFunc(s.failed, func(a, b v1alpha1.FailedNamespace) int {
			return cmp.Compare(a.Namespace, b.Namespace)
		})
		st.FailedNamespaces = s.failed[:min(total, maxFailed)]
		st.ObservedGeneration = gen
	}
	conditions.Set(&st.Conditions, outcome, gen)
	// A reconcile that changed nothing (most of those a stamp's status
	// change queues) writes nothing.
	if !equality.Semantic.DeepEqual(r.Kind.Status(s.before), st) {
		if perr := r.Client.Status().Patch(ctx, s.obj, client.MergeFrom(s.before)); perr != nil {
			if apierrors.IsNotFound(perr) {
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, failure.Redacted(fmt.Errorf("writing the status of %s %q: %w", r.Kind.Name, s.obj.GetName(), perr))
		}
	}
	if err != nil && !failure.Terminal(err) {
		return ctrl.Result{}, failure.Redacted(err)
	}
	every := defaultRefresh
	if s.spec.Refresh != nil && s.spec.Refresh.Duration > 0 {
		every = s.spec.Refresh.Duration
	}
	if s.unwritten {
		// A stamp not written for a passing cause (the API server or the
		// admission webhook unavailable) brings no event; look again soon.
		every = min(every, retryUnwritten)
	}
	return ctrl.Result{RequeueAfter: every}, nil
}

// retryUnwritten is how soon a reconcile that could not write a stamp for
// a passing cause is tried again.
const retryUnwritten = 30 * time.Second
