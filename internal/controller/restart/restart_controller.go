// Package restart restarts the workloads (Deployments, StatefulSets,
// DaemonSets) that opt in, or that an ExternalSecret lists in
// spec.target.restartWorkloads (listed.go), when a Secret they consume
// rotates: an
// ExternalSecret writing it reports a rotation (status.lastRotationTime
// moves) that changed a key they use.
//
// What to do is decided in policy.go (which Secrets and keys a workload
// uses, the baseline, debounce) and gate.go (held or go), both pure; this
// file reads the cluster and patches workloads. Everything a decision
// needs is in the workload's annotations and the ExternalSecrets' status,
// so a restart of the operator neither repeats nor loses a restart.
package restart

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Event reasons.
const (
	// ReasonRestarted: a workload was restarted for a rotation.
	ReasonRestarted = "Restarted"
	// ReasonHeld: a due restart is held back (rate, window, rollout),
	// told as held.go says.
	ReasonHeld = "RestartHeld"
	// ReasonRestartNotNeeded: a restart was owed, but by the env strategy
	// it would change no pod (the keys in use hold what the pods were
	// started with); it is settled without one.
	ReasonRestartNotNeeded = "RestartNotNeeded"
	// ReasonInvalidAnnotation: an annotation of the workload does not
	// parse.
	ReasonInvalidAnnotation = "InvalidAnnotation"
)

// Selector selects the opted-in workloads.
func Selector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{Label: LabelValue})
}

// Reconciler restarts opted-in workloads of one kind.
type Reconciler struct {
	// Client reads workloads and ExternalSecrets from the cache (which
	// holds only opted-in workloads) and patches workloads.
	Client client.Client
	// APIReader reads the workloads that ExternalSecrets list and that
	// have no label, so are not in the cache.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Class is this instance's --controller-class: it restarts the
	// workloads whose ClassAnnotation names it.
	Class string
	Clock engine.Clock
	// Gate is shared by the reconcilers of every kind.
	Gate *Gate
	// HeldWarningAfter is how long a restart is held for a rollout before
	// the hold is told (held.go).
	HeldWarningAfter time.Duration
	// Notifier, when set, is told of restarts and told holds (notify.go).
	Notifier Notifier

	kind kind
	// recorded holds, per workload (Ref), the generation that Watchword's
	// last record in its annotations gave it, when that patch alone moved
	// the generation of a workload whose rollout had finished (the API
	// server counts annotation changes of Deployments): until its
	// controller catches up, that generation is no rollout.
	recorded *sync.Map
	// warned holds the annotation errors already warned about, per
	// workload and annotation, so that one bad value gets one event.
	warned *sync.Map
	// readers read the cached (opted-in) workloads, by kind name: the
	// manager's client for the apps kinds, a cache of their own for
	// Rollouts, once the cluster serves them.
	readers *sync.Map
	// held holds, per held workload, this instance's memory of its hold
	// (held.go).
	held *sync.Map
	// wakes reconciles held workloads at once, by kind name.
	wakes map[string]chan event.GenericEvent
	// arrivals watches for the listed workloads that do not exist yet.
	arrivals *arrivals
	// objects watches the ConfigMaps and Secrets that workloads reload
	// for (objwatch.go).
	objects *watchedObjects
}

// Options tune the restart controllers.
type Options struct {
	// RestartRate caps restarts across the cluster; a zero rate means no
	// cap.
	RestartRate Rate
	// Namespaces, when set, confine the Rollouts' cache to them, as the
	// manager's cache is (a namespaced operator, `--namespace`).
	Namespaces []string
	// HeldWarningAfter is how long a restart is held for a rollout before
	// the hold is told (held.go); zero tells it at once.
	HeldWarningAfter time.Duration
	// Notifier, when set, is told of restarts and told holds.
	Notifier Notifier
	// DigestKeys make the digests of reloads recorded on workloads (nil:
	// plain SHA-256).
	DigestKeys *engine.DigestKeys
}

// Controllers are the restart controllers: one per workload kind, sharing
// one gate, and the lister of restartWorkloads (Lister). Their fields are
// what every one of them uses.
type Controllers struct {
	Recorder record.EventRecorder
	Class    string
	Clock    engine.Clock
}

// SetupWithManager registers one controller per workload kind, sharing
// one gate, and the Lister.
func (c *Controllers) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	recorder, class, clock := c.Recorder, c.Class, c.Clock
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ExternalSecret{}, IndexListed, listedKeys); err != nil {
		return err
	}
	gate := NewGate(opts.RestartRate)
	warned, recorded, held, readers := &sync.Map{}, &sync.Map{}, &sync.Map{}, &sync.Map{}
	wakes := map[string]chan event.GenericEvent{}
	for _, k := range append(kinds, rolloutKind) {
		wakes[k.name] = make(chan event.GenericEvent, wakeBuffer)
	}
	meta, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	awaited := &arrivals{ctx: ctx, meta: meta, waiting: map[Ref]context.CancelFunc{},
		arrived: func(ref Ref) { wake(wakes, []Ref{ref}) }}
	// A change of a watched object is recorded as seen before its
	// workloads are woken: their wake-ups wait for room rather than drop.
	objects := newWatchedObjects(ctx, meta, mgr.GetAPIReader(), opts.DigestKeys, func(refs []Ref) { wakeWait(ctx, wakes, refs) })
	newReconciler := func(k kind) *Reconciler {
		return &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Class: class, Clock: clock, Gate: gate,
			HeldWarningAfter: opts.HeldWarningAfter, Notifier: opts.Notifier, kind: k,
			warned: warned, recorded: recorded, held: held, readers: readers, wakes: wakes, arrivals: awaited, objects: objects}
	}
	for _, k := range kinds {
		readers.Store(k.name, mgr.GetClient())
		if err = newReconciler(k).register(mgr, mgr.GetCache()); err != nil {
			return err
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	rollouts := &rolloutWatch{disc: disc, start: func() error {
		// Only the Rollouts with the label, in a cache of their own: the
		// manager's cache cannot be told about a kind that appears later.
		co := cache.Options{Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient(),
			DefaultLabelSelector: Selector(), DefaultTransform: cache.TransformStripManagedFields()}
		if len(opts.Namespaces) > 0 {
			co.DefaultNamespaces = map[string]cache.Config{}
			for _, ns := range opts.Namespaces {
				co.DefaultNamespaces[ns] = cache.Config{}
			}
		}
		c, err := cache.New(mgr.GetConfig(), co)
		if err != nil {
			return err
		}
		if err := mgr.Add(c); err != nil {
			return err
		}
		readers.Store(rolloutKind.name, client.Reader(c))
		return newReconciler(rolloutKind).register(mgr, c)
	}}
	if err := mgr.Add(rollouts); err != nil {
		return err
	}
	l := &Lister{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Class: class, Rollouts: rollouts.served.Load}
	return l.SetupWithManager(mgr)
}

// register starts the reconciler's controller: its workloads come from
// workloads, the ExternalSecrets from the manager's cache.
func (r *Reconciler) register(mgr ctrl.Manager, workloads cache.Cache) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("restart-"+strings.ToLower(r.kind.name)).
		WatchesRawSource(source.Kind(workloads, r.kind.newObj(), &handler.EnqueueRequestForObject{})).
		Watches(&v1alpha1.ExternalSecret{}, handler.EnqueueRequestsFromMapFunc(r.consumers),
			builder.WithPredicates(rotationMoved)).
		WatchesRawSource(source.Kind(mgr.GetCache(), client.Object(&v1alpha1.ExternalSecret{}),
			handler.EnqueueRequestsFromMapFunc(r.listed), listChanged)).
		WatchesRawSource(source.Channel(r.wakes[r.kind.name], &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// wakeBuffer bounds the wake-ups waiting for each kind's controller; one
// that does not fit is dropped, and its restart asks again after pollHeld,
// except the wake-ups for changes of watched objects, which wait for room
// (wakeWait).
const wakeBuffer = 1024

// wake reconciles the held workloads now, rather than at their next poll.
func (r *Reconciler) wake(refs []Ref) { wake(r.wakes, refs) }

// wakeWait is wake that waits for room in the channels (or the end of
// ctx) rather than drop a wake-up: for news that nothing else brings
// again, such as a change of a watched object.
func wakeWait(ctx context.Context, wakes map[string]chan event.GenericEvent, refs []Ref) {
	for _, ref := range refs {
		for _, k := range append(kinds, rolloutKind) {
			if k.name != ref.Kind {
				continue
			}
			obj := k.newObj()
			obj.SetNamespace(ref.Namespace)
			obj.SetName(ref.Name)
			select {
			case wakes[k.name] <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// wake reconciles the workloads now, through their kind's channel.
func wake(wakes map[string]chan event.GenericEvent, refs []Ref) {
	for _, ref := range refs {
		for _, k := range append(kinds, rolloutKind) {
			if k.name != ref.Kind {
				continue
			}
			obj := k.newObj()
			obj.SetNamespace(ref.Namespace)
			obj.SetName(ref.Name)
			select {
			case wakes[k.name] <- event.GenericEvent{Object: obj}:
			default:
			}
		}
	}
}

// rotationMoved passes the updates of ExternalSecrets whose
// lastRotationTime moved; at start, every workload is reconciled anyway.
var rotationMoved = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, after := e.ObjectOld.(*v1alpha1.ExternalSecret), e.ObjectNew.(*v1alpha1.ExternalSecret)
		return !before.Status.LastRotationTime.Equal(after.Status.LastRotationTime)
	},
}

// consumers are the opted-in workloads of this kind in the
// ExternalSecret's namespace that consume its target.
func (r *Reconciler) consumers(ctx context.Context, o client.Object) []reconcile.Request {
	es := o.(*v1alpha1.ExternalSecret)
	target := es.Status.Target
	if target == "" {
		target = es.Name
	}
	list := r.kind.newList()
	cached, ok := r.readers.Load(r.kind.name)
	if !ok {
		return nil
	}
	if err := cached.(client.Reader).List(ctx, list, client.InNamespace(es.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing workloads", "kind", r.kind.name)
		return nil
	}
	var out []reconcile.Request
	for _, w := range r.kind.items(list) {
		used, err := Consumed(w.GetAnnotations()[OnAnnotation], &podTemplate(w).Spec)
		rl, _ := Reloads(w.GetAnnotations(), &podTemplate(w).Spec)
		_, reloads := rl.Objects[Object{KindSecret, target}]
		if _, ok := used[target]; ok || reloads || err != nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
		}
	}
	return out
}

// settle records a plan that restarts nothing now, and asks again when
// the restart it owes is due.
func (r *Reconciler) settle(ctx context.Context, now time.Time, ref Ref, obj client.Object, plan Plan) (ctrl.Result, error) {
	r.Gate.Settled(ref)
	r.unheld(ref, len(plan.Next.Pending) > 0)
	if plan.Changed {
		if err := r.record(ctx, ref, obj, plan.Next); err != nil {
			return conflictOr(err)
		}
	}
	if len(plan.Next.Pending) > 0 {
		return ctrl.Result{RequeueAfter: plan.DueAt.Sub(now)}, nil
	}
	return ctrl.Result{}, nil
}

// admit tells whether a due restart goes ahead now: not while the
// workload's window does not parse (badWindow) or is closed, and then
// as the gate says.
func (r *Reconciler) admit(ctx context.Context, now time.Time, ref Ref, obj client.Object, window *Window, badWindow bool) Verdict {
	var v Verdict
	switch open, opens := window.Open(now); {
	case badWindow:
		// No retry: fixing the annotation changes the workload, which
		// reconciles it again.
		v = Verdict{Reason: HeldInvalidWindow, Message: "the restart waits until " + WindowAnnotation + " is fixed"}
	case window == nil || open:
		return r.Gate.Admit(now, ref, r.inProgress(ref, obj), r.available(ctx))
	case opens.IsZero():
		v = Verdict{Reason: HeldWindow, Message: fmt.Sprintf("the restart waits for the maintenance window %s, which does not open in the next years", window)}
	default:
		v = Verdict{Reason: HeldWindow, RetryAfter: opens.Sub(now),
			Message: fmt.Sprintf("the restart waits for the maintenance window %s, which opens at %s", window, opens.Format(time.RFC3339))}
	}
	return v
}

// hold records what a held restart owes and, when the hold is news
// (held.go), tells it, once: the reasons told are remembered on the
// workload before the event is sent (but for the rate's, which are
// remembered here), so that neither a retry nor the next instance tells
// them again.
func (r *Reconciler) hold(ctx context.Context, now time.Time, ref Ref, obj client.Object, plan Plan, v Verdict) (ctrl.Result, error) {
	mem, lasted := r.memory(ref).try(v, now)
	r.held.Store(ref, mem)
	tell, retry := Tell(v, slices.Concat(plan.Next.Held, mem.told), lasted, r.HeldWarningAfter)
	next, onWorkload := plan.Next, tell && toldOnWorkload(v.Reason)
	if onWorkload {
		next.Held = announced(next.Held, v.Reason)
	}
	if plan.Changed || onWorkload {
		if err := r.record(ctx, ref, obj, next); err != nil {
			return conflictOr(err)
		}
	}
	if tell {
		if !onWorkload {
			mem.told = announced(mem.told, v.Reason)
			r.held.Store(ref, mem)
		}
		r.Recorder.Event(obj, heldEventType(v.Reason), ReasonHeld, v.Message+"; "+owedText(next.Pending))
		r.notifyHeld(ctx, ref, now, v, next.Pending)
		metrics.RestartsHeld.WithLabelValues(ref.Namespace, ref.Kind, v.Reason).Inc()
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// memory is this instance's memory of ref's hold; none when it is not
// held.
func (r *Reconciler) memory(ref Ref) memory {
	if m, ok := r.held.Load(ref); ok {
		return m.(memory)
	}
	return memory{}
}

// unheld tells that ref's restart is not due now: a new rotation's
// debounce runs (owed), and the hold goes on once it is due again with
// what it has told; or nothing is owed, and the hold is over.
func (r *Reconciler) unheld(ref Ref, owed bool) {
	if !owed {
		r.held.Delete(ref)
		return
	}
	if m, ok := r.held.Load(ref); ok {
		r.held.Store(ref, memory{told: m.(memory).told})
	}
}

// rotations are the last rotations of the ExternalSecrets writing the
// consumed Secrets, with those ExternalSecrets by Secret.
func (r *Reconciler) rotations(ctx context.Context, ns string, used map[string]Usage) ([]Rotation, map[string][]*v1alpha1.ExternalSecret, error) {
	var rots []Rotation
	sources := map[string][]*v1alpha1.ExternalSecret{}
	for name := range used {
		if _, watched := objectOf(name); watched {
			continue
		}
		writers, err := targetindex.Writers(ctx, r.Client, targetindex.Field, ns, name)
		if err != nil {
			return nil, nil, fmt.Errorf("listing the ExternalSecrets of Secret %q: %w", name, err)
		}
		for i := range writers {
			es := &writers[i]
			sources[name] = append(sources[name], es)
			if t := es.Status.LastRotationTime; t != nil {
				rots = append(rots, Rotation{Secret: name, At: t.Time, Keys: es.Status.LastRotatedKeys})
			}
		}
	}
	return rots, sources, nil
}

// available tells whether a workload has finished its rollout, from the
// cache; one that is gone, or no longer opted in, holds nothing back. A
// cached version older than minGen (the generation Watchword's restart
// gave it) is not available: its finished rollout is the one before.
func (r *Reconciler) available(ctx context.Context) func(Ref, int64) bool {
	return func(ref Ref, minGen int64) bool {
		for _, k := range append(kinds, rolloutKind) {
			if k.name != ref.Kind {
				continue
			}
			obj := k.newObj()
			if err := r.fetch(ctx, k.name, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj, true); err != nil {
				return apierrors.IsNotFound(err)
			}
			return obj.GetGeneration() >= minGen && !r.inProgress(ref, obj)
		}
		return true
	}
}

// inProgress tells whether the workload's rollout has not finished; a
// generation that only Watchword's record gave it does not count.
func (r *Reconciler) inProgress(ref Ref, obj client.Object) bool {
	if replicasBehind(obj) {
		return true
	}
	seen := observedGeneration(obj)
	if seen >= obj.GetGeneration() {
		return false
	}
	g, ok := r.recorded.Load(ref)
	return !ok || g.(int64) != obj.GetGeneration() || seen != g.(int64)-1
}

// record records st in the workload's annotations, and remembers the
// generation the record alone gave a workload whose rollout had finished.
func (r *Reconciler) record(ctx context.Context, ref Ref, obj client.Object, st State) error {
	before, finished := obj.GetGeneration(), !rollingOut(obj)
	if err := r.patch(ctx, obj, st, nil, ""); err != nil {
		return err
	}
	if after := obj.GetGeneration(); finished && after == before+1 {
		r.recorded.Store(ref, after)
	}
	return nil
}

// patch records st in the workload's annotations and, with restartAt,
// restarts it as `kubectl rollout restart` does, or, with envDigest (the
// env strategy), by setting DigestEnv in every container of its pod
// template; in one patch that carries the resourceVersion read: a patch
// made from a stale read fails instead of restarting twice.
func (r *Reconciler) patch(ctx context.Context, obj client.Object, st State, restartAt *time.Time, envDigest string) error {
	seen, pending, held := st.Encode()
	ann := map[string]any{ForAnnotation: seen, PendingAnnotation: nil, HeldAnnotation: nil, DigestsAnnotation: nil}
	if pending != "" {
		ann[PendingAnnotation] = pending
	}
	if held != "" {
		ann[HeldAnnotation] = held
	}
	if len(st.Digests) > 0 {
		ann[DigestsAnnotation] = encodeDigests(st.Digests)
	}
	p := map[string]any{"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion(), "annotations": ann}}
	patchType := types.MergePatchType
	switch {
	case restartAt == nil:
	case r.kind.name == rolloutKind.name:
		// As Argo Rollouts restarts a Rollout (rollout.go).
		p["spec"] = map[string]any{"restartAt": restartAt.UTC().Format(time.RFC3339)}
	case envDigest != "":
		// A strategic merge patch merges containers and their env by
		// name: the one variable is set, nothing else of the template is
		// touched.
		containers := []any{}
		for _, c := range podTemplate(obj).Spec.Containers {
			containers = append(containers, map[string]any{"name": c.Name, "env": []any{map[string]any{"name": DigestEnv, "value": envDigest}}})
		}
		p["spec"] = r.kind.templatePatch(map[string]any{"spec": map[string]any{"containers": containers}})
		patchType = types.StrategicMergePatchType
	default:
		p["spec"] = r.kind.templatePatch(map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{RestartedAtAnnotation: restartAt.UTC().Format(time.RFC3339Nano)}}})
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(patchType, data)); err != nil {
		return fmt.Errorf("patching %s %s/%s: %w", r.kind.name, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// conflictOr retries a patch that met a newer version of the workload
// quietly: the cache brings the new version, and with it a new reconcile.
func conflictOr(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, err
}

// warn reports an annotation that does not parse (err), once per value,
// and tells whether it did not.
func (r *Reconciler) warn(obj client.Object, ref Ref, annotation string, err error) bool {
	key := ref.String() + "|" + annotation
	if err == nil {
		r.warned.Delete(key)
		return false
	}
	// The error names the value: a new value, a new event.
	if prev, ok := r.warned.Swap(key, err.Error()); !ok || prev != err.Error() {
		r.Recorder.Event(obj, corev1.EventTypeWarning, ReasonInvalidAnnotation, err.Error())
	}
	return true
}

// owedText names the Secrets and keys of an owed restart, never a value.
func owedText(pending map[string]Owed) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		parts = append(parts, owedName(name, pending[name]))
	}
	return strings.Join(parts, ", ")
}

func keyText(keys []string) string {
	if len(keys) == 0 {
		return "any"
	}
	return strings.Join(keys, ", ")
}
