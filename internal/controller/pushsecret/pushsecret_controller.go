// Package pushsecret reconciles PushSecrets: it publishes the selected keys
// of a Kubernetes Secret to the destinations a PushSecret names, each in a
// store that can write, and unpublishes what it owns when a destination or
// the PushSecret goes (deletionPolicy Delete).
//
// A reconcile is the list of steps in publishSteps, over one scope. One
// destination failing does not stop the others, and nothing already
// published is deleted because an input is missing or wrong.
package pushsecret

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/publishing"
	"github.com/watchword-dev/watchword/internal/steps"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// Finalizer lets a PushSecret of deletionPolicy Delete unpublish what it
// owns before it goes.
const Finalizer = "watchword.io/unpublish"

// conflictRetry is how soon a reconcile whose status write met a
// concurrent change runs again.
const conflictRetry = time.Second

// Reconciler reconciles PushSecrets.
type Reconciler struct {
	// Client reads PushSecrets and stores from the cache, and Secrets from
	// the API server (their contents are never cached).
	Client client.Client
	// Sources tells the resourceVersion of a source Secret; asking starts
	// a watch of it by name, so that a change is published at once.
	Sources storeaccess.SecretVersions
	// Selected lists the Secrets a secretSelector matches; asking starts
	// a watch of that selection (metadata only, filtered by the API
	// server), so that a Secret that starts or stops matching is noticed
	// at once.
	Selected Selections
	Clients  *storeaccess.Clients
	Recorder record.EventRecorder
	// DigestKeys make each destination's status.dataHash; nil: plain
	// SHA-256.
	DigestKeys *engine.DigestKeys
	// Class is this instance's --controller-class. A PushSecret is served
	// by the instance of the class of its first destination's store (the
	// default instance when that store does not exist); every destination
	// must use a store of that class.
	Class string
	// Clock is the only source of time of a reconcile.
	Clock engine.Clock
}

// scope is one reconcile of one PushSecret.
type scope struct {
	ps     *v1alpha1.PushSecret
	before *v1alpha1.PushSecret
	now    metav1.Time

	// sources are the Secrets to publish (one, or those secretSelector
	// matches), each with what it publishes.
	sources []*origin
	// targets are the remote secrets to publish to: the destinations of
	// the spec, or with secretSelector each destination for each source.
	targets []target

	// destinations is the new status of every destination.
	destinations []v1alpha1.PushSecretDestinationStatus
	// failures are the errors of the destinations that failed.
	failures []error
	// outcome is the reconcile's result; retry, when set, has it retried
	// with backoff.
	outcome ctrl.Result
	retry   error
}

// publishSteps is a reconcile of a PushSecret, in order.
var publishSteps = []steps.Step[*Reconciler, *scope]{
	{Name: "finalizer", Run: (*Reconciler).syncFinalizer},
	{Name: "source", Run: (*Reconciler).readSource},
	{Name: "publish", Run: (*Reconciler).publishAll},
	{Name: "unpublish", Run: (*Reconciler).unpublishRemoved},
	{Name: "record", Run: (*Reconciler).record},
}

// Reconcile publishes one PushSecret.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ps v1alpha1.PushSecret
	if err := r.Client.Get(ctx, req.NamespacedName, &ps); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.ours(ctx, &ps) {
		return ctrl.Result{}, nil
	}
	s := &scope{ps: &ps, before: ps.DeepCopy(), now: metav1.NewTime(r.Clock.Now())}
	if !ps.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, s)
	}
	res, err := r.run(ctx, s)
	return r.writeStatus(ctx, s, res, err)
}

// ours tells whether this instance serves the PushSecret: the class of
// its first destination's store is this instance's, or that store does not
// exist and this is the default instance (which reports it).
func (r *Reconciler) ours(ctx context.Context, ps *v1alpha1.PushSecret) bool {
	if len(ps.Spec.Destinations) == 0 {
		return r.Class == ""
	}
	store, err := storeaccess.Resolve(ctx, r.Client, ps.Namespace, publishing.StoreRef(ps.Spec.Destinations[0]))
	if err != nil || store == nil {
		return r.Class == ""
	}
	return store.Controller == r.Class
}

// run runs the steps until one ends the reconcile or fails.
func (r *Reconciler) run(ctx context.Context, s *scope) (ctrl.Result, error) {
	failed, err := steps.Run(ctx, r, publishSteps, s)
	if err != nil {
		if ctx.Err() != nil {
			return ctrl.Result{}, ctx.Err()
		}
		ctrl.LoggerFrom(ctx).V(1).Info("publish step failed", "step", failed, "reason", failure.Classify(err).Reason)
		return r.fail(s, err)
	}
	return s.outcome, s.retry
}

// readSource reads the source Secret from the API server and selects the
// keys to publish. Asking Sources for its version first starts the watch
// by name that brings every later change of it here. With secretSelector
// it reads each Secret that matches instead (readSelected).
func (r *Reconciler) readSource(ctx context.Context, s *scope) (bool, error) {
	ps := s.ps
	if ps.Spec.SecretSelector != nil {
		return false, r.readSelected(ctx, s)
	}
	ref := provider.NamespacedName{Namespace: ps.Namespace, Name: ps.Spec.SecretName}
	if _, _, err := r.Sources.ResourceVersion(ctx, ref); err != nil {
		return false, err
	}
	var src corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ps.Namespace, Name: ps.Spec.SecretName}, &src); err != nil {
		if apierrors.IsNotFound(err) {
			return false, failure.Terminalf(failure.SourceMissing,
				"Secret %q to publish does not exist in namespace %q; create it or fix spec.secretName (nothing published was changed)", ps.Spec.SecretName, ps.Namespace)
		}
		return false, fmt.Errorf("reading Secret %q to publish: %w", ps.Spec.SecretName, err)
	}
	one := selectSource(ps, ps.Spec.SecretName, src.Data)
	if one.err != nil {
		return false, one.err
	}
	s.sources = []*origin{one}
	s.targets = expand(ps, s.sources)
	return false, nil
}

// selectSource selects and renders what one Secret publishes.
func selectSource(ps *v1alpha1.PushSecret, name string, data map[string][]byte) *origin {
	fields, remoteKeys, err := selectData(ps, name, data)
	if err != nil {
		return &origin{name: name, err: err}
	}
	if t := ps.Spec.Template; t != nil {
		if fields, err = engine.RenderData(t.Data, t.MergePolicy == v1alpha1.TemplateMergeMerge, fields); err != nil {
			return &origin{name: name, err: fmt.Errorf("spec.template over Secret %q: %w", name, err)}
		}
		remoteKeys = slices.Sorted(maps.Keys(fields))
	}
	return &origin{name: name, publication: engine.Publication{Fields: fields}, keys: remoteKeys}
}

// interval is the PushSecret's refresh interval; 0 never reads back.
func interval(ps *v1alpha1.PushSecret) time.Duration {
	if ps.Spec.RefreshInterval == nil {
		return time.Hour
	}
	return ps.Spec.RefreshInterval.Duration
}

// nextCheck is how long until the first destination is due to be read
// back; 0 (no requeue) with refreshInterval 0.
func nextCheck(s *scope) time.Duration {
	every := interval(s.ps)
	if every <= 0 {
		return 0
	}
	next := every
	for _, d := range s.destinations {
		if d.CheckedTime == nil {
			continue
		}
		if left := d.CheckedTime.Add(every).Sub(s.now.Time); left < next {
			next = left
		}
	}
	return max(next, time.Second)
}
