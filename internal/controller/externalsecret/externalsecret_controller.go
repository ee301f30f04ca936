// Package externalsecret reconciles ExternalSecrets: it resolves the store,
// asks the engine for the target's content and writes it as the creation
// policy says, keeping the last good data when anything fails.
package externalsecret

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/conditions"
	"github.com/watchword-dev/watchword/internal/controller/storeaccess"
	"github.com/watchword-dev/watchword/internal/engine"
)

// Reconciler reconciles ExternalSecrets.
type Reconciler struct {
	// Client reads ExternalSecrets and stores from the cache, and Secrets
	// and ConfigMaps from the API server.
	Client client.Client
	// Meta reads object metadata from the cache; of Secrets it holds only
	// those that carry Watchword's label (the targets it owns).
	Meta client.Reader
	// Named tells the resourceVersion of a Secret watched by name: the
	// targets of creationPolicy Merge.
	Named    storeaccess.SecretVersions
	Clients  *storeaccess.Clients
	Fetcher  *engine.Fetcher
	Recorder record.EventRecorder
	// Class is this instance's --controller-class.
	Class string
	Clock engine.Clock
	// Metrics, if set, is told about each sync.
	Metrics Observer

	// written remembers what this instance last wrote to each target
	// ("ns/name" to written): the watch event of its own write does not
	// queue the ExternalSecret again, and a refresh that brings nothing new
	// neither reads nor writes the target.
	written sync.Map

	// pending holds the status of a successful sync until the cache shows
	// it ("ns/name" to *v1alpha1.ExternalSecretStatus), so that a reconcile
	// that reads a stale ExternalSecret does not sync it again.
	pending sync.Map
}

// Observer receives sync outcomes for metrics.
type Observer interface {
	ObserveSync(duration time.Duration, reason string)
}

// scope is one reconcile of one ExternalSecret.
type scope struct {
	es       *v1alpha1.ExternalSecret
	before   *v1alpha1.ExternalSecret
	now      metav1.Time
	store    *storeaccess.Resolved
	interval time.Duration
}

// Reconcile brings one ExternalSecret's target to its desired state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	start := r.Clock.Now()
	var es v1alpha1.ExternalSecret
	if err = r.Client.Get(ctx, req.NamespacedName, &es); err != nil {
		if apierrors.IsNotFound(err) {
			r.pending.Delete(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !es.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &es)
	}
	store, storeErr := storeaccess.Resolve(ctx, r.Client, es.Namespace, es.Spec.SecretStoreRef)
	if !r.ours(store) {
		return ctrl.Result{}, nil
	}
	r.catchUp(&es)
	s := &scope{es: &es, before: es.DeepCopy(), now: metav1.NewTime(r.Clock.Now()), store: store, interval: refreshInterval(&es)}
	defer func() {
		switch perr := r.writeStatus(ctx, s); {
		case perr == nil || err != nil:
		case apierrors.IsConflict(perr):
			// The ExternalSecret changed meanwhile: sync it again as it
			// is now (its target write, if any, is remembered).
			res = ctrl.Result{RequeueAfter: conflictRetry}
		default:
			res, err = ctrl.Result{}, perr
		}
		if r.Metrics != nil {
			r.Metrics.ObserveSync(r.Clock.Now().Sub(start), string(outcomeReason(err, s)))
		}
	}()
	if storeErr != nil {
		return r.fail(s, storeErr)
	}
	return r.sync(ctx, s)
}

// catchUp replaces a cached status that is older than the one this
// instance last wrote, and forgets the written one once the cache has it.
func (r *Reconciler) catchUp(es *v1alpha1.ExternalSecret) {
	key := es.Namespace + "/" + es.Name
	v, ok := r.pending.Load(key)
	if !ok {
		return
	}
	wrote := v.(*v1alpha1.ExternalSecretStatus)
	if caughtUp(es, wrote) {
		r.pending.Delete(key)
		return
	}
	es.Status = *wrote.DeepCopy()
}

// caughtUp tells whether a cached ExternalSecret shows the status this
// instance wrote, or has changed since, so that the written one is no
// longer needed.
func caughtUp(es *v1alpha1.ExternalSecret, wrote *v1alpha1.ExternalSecretStatus) bool {
	cached := es.Status.RefreshTime
	return wrote.ObservedGeneration != es.Generation || (cached != nil && !cached.Before(wrote.RefreshTime))
}

// forget drops what this instance remembers of an ExternalSecret once the
// cache shows it: its written status when the cache has caught up, and
// everything when it is gone.
func (r *Reconciler) forget(es *v1alpha1.ExternalSecret, deleted bool) {
	key := es.Namespace + "/" + es.Name
	if deleted {
		r.pending.Delete(key)
		r.written.Delete(es.Namespace + "/" + targetName(es))
		return
	}
	if v, ok := r.pending.Load(key); ok && caughtUp(es, v.(*v1alpha1.ExternalSecretStatus)) {
		r.pending.CompareAndDelete(key, v)
	}
}

// ours tells whether this instance serves the store. A missing store is
// reported by the default instance only.
func (r *Reconciler) ours(store *storeaccess.Resolved) bool {
	if store == nil {
		return r.Class == ""
	}
	return store.Controller == r.Class
}

func (r *Reconciler) sync(ctx context.Context, s *scope) (ctrl.Result, error) {
	es := s.es
	if err := r.ensureFinalizer(ctx, es); err != nil {
		return ctrl.Result{}, err
	}
	reader, err := r.Clients.Get(ctx, s.store)
	if err != nil {
		return r.fail(s, fmt.Errorf("%s: %w", s.store.Describe(), err))
	}
	sources, srcVersion, err := r.templateSources(ctx, es)
	if err != nil {
		return r.fail(s, err)
	}
	inputs := fmt.Sprintf("%d|%s|%s", es.Generation, s.store.ID(), srcVersion)
	force := es.Annotations[conditions.ForceSyncAnnotation]
	forced := force != "" && force != es.Status.ForceSyncedValue
	offset := phaseOffset(es, s.store.ID(), max(s.interval, time.Second))
	due := forced || es.Status.RefreshTime == nil || inputs != es.Status.InputsVersion
	// A timer may fire a hair early; that still counts as due, and the
	// read of one interval ago is then too old to serve.
	slack := min(s.interval/100, time.Second)
	if !due && s.interval > 0 {
		due = !s.now.Time.Add(slack).Before(nextRefresh(es.Status.RefreshTime.Time, s.interval, offset))
	}
	drifted := !due && r.targetDrifted(ctx, es)
	if !due && !drifted && !failing(es) {
		return r.requeue(s, offset), nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("syncing", "due", due, "forced", forced, "drifted", drifted, "inputsChanged", inputs != es.Status.InputsVersion)
	maxAge := readMaxAge(es, s.interval, forced)
	if due && maxAge > slack {
		maxAge -= slack
	}
	result, err := r.Fetcher.Sync(ctx, engine.Input{Spec: &es.Spec, Store: s.store.ID(), Reader: reader, TemplateSources: sources, MaxAge: maxAge})
	if err != nil {
		return r.fail(s, fmt.Errorf("%s: %w", s.store.Describe(), err))
	}
	out, err := r.write(ctx, es, result)
	if err != nil {
		return r.fail(s, err)
	}
	if out.resourceVersion != "" {
		rec := written{resourceVersion: out.resourceVersion}
		if es.Spec.Target.CreationPolicy != v1alpha1.CreationPolicyMerge {
			rec.sum, rec.hasSum = resultSum(result), true
		}
		r.written.Store(es.Namespace+"/"+targetName(es), rec)
	}
	if out.action != "" {
		r.Recorder.Eventf(es, corev1.EventTypeNormal, out.action, "Secret %q %s; keys changed: %s",
			targetName(es), strings.ToLower(out.action), keyList(out.changedKeys))
	}
	r.succeed(s, result, out, inputs, force, due)
	return r.requeue(s, offset), nil
}

// readMaxAge is how old a shared read may be to serve this sync: a forced
// sync reads anew; otherwise a read younger than the refresh interval is
// fresh enough. With refreshInterval 0 a spec change reads anew, while a
// drift repair reuses what was read.
func readMaxAge(es *v1alpha1.ExternalSecret, interval time.Duration, forced bool) time.Duration {
	switch {
	case forced:
		return 0
	case interval > 0:
		return interval
	case es.Generation != es.Status.ObservedGeneration:
		return 0
	default:
		return 24 * time.Hour
	}
}

func (r *Reconciler) write(ctx context.Context, es *v1alpha1.ExternalSecret, res *engine.Result) (*writeResult, error) {
	switch es.Spec.Target.CreationPolicy {
	case v1alpha1.CreationPolicyNone:
		return &writeResult{keys: sortedKeys(res.Data)}, nil
	case v1alpha1.CreationPolicyMerge:
		return r.writeMerge(ctx, es, res)
	default:
		return r.writeOwner(ctx, es, res)
	}
}

// targetDrifted tells whether the target changed since the last write, from
// the metadata cache alone.
func (r *Reconciler) targetDrifted(ctx context.Context, es *v1alpha1.ExternalSecret) bool {
	if es.Spec.Target.CreationPolicy == v1alpha1.CreationPolicyNone {
		return false
	}
	rv, ok := r.targetVersion(ctx, es)
	return !ok || rv != es.Status.TargetResourceVersion
}

func failing(es *v1alpha1.ExternalSecret) bool {
	c := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
	return c == nil || c.Status != metav1.ConditionTrue
}

// templateSources reads the ConfigMaps of templateFrom from the
// ExternalSecret's own namespace, and returns their versions.
func (r *Reconciler) templateSources(ctx context.Context, es *v1alpha1.ExternalSecret) (map[string]map[string]string, string, error) {
	t := es.Spec.Target.Template
	if t == nil || len(t.TemplateFrom) == 0 {
		return nil, "", nil
	}
	out := map[string]map[string]string{}
	var versions []string
	for _, from := range t.TemplateFrom {
		name := from.ConfigMap.Name
		if _, done := out[name]; done {
			continue
		}
		var cm corev1.ConfigMap
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, "", &storeaccess.UserError{Reason: "TemplateNotFound", Msg: fmt.Sprintf(
					"template ConfigMap %q not found in namespace %q (spec.target.template.templateFrom)", name, es.Namespace)}
			}
			return nil, "", fmt.Errorf("reading template ConfigMap %q: %w", name, err)
		}
		out[name] = cm.Data
		versions = append(versions, name+"="+cm.ResourceVersion)
	}
	return out, strings.Join(versions, ","), nil
}

func (r *Reconciler) requeue(s *scope, offset time.Duration) ctrl.Result {
	if s.interval <= 0 || s.es.Status.RefreshTime == nil {
		return ctrl.Result{}
	}
	next := nextRefresh(s.es.Status.RefreshTime.Time, s.interval, offset)
	wait := next.Sub(s.now.Time)
	if wait < time.Second {
		wait = time.Second
	}
	// Periodic refreshes queue behind new and changed objects.
	return ctrl.Result{RequeueAfter: wait, Priority: ptr.To(handler.LowPriority)}
}

func keyList(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// outcomeReason is the reason label of a sync for metrics.
func outcomeReason(err error, s *scope) string {
	if err != nil {
		return "Error"
	}
	if s == nil {
		return "Skipped"
	}
	if c := conditions.FindES(s.es.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return "Unknown"
}

// retryable tells whether an error is worth a retry with backoff.
func retryable(err error) bool {
	var ue *storeaccess.UserError
	if errors.As(err, &ue) {
		return false
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return true
	}
	_, retry := engine.Classify(err)
	return retry
}
