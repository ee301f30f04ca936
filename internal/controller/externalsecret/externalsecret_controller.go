// Package externalsecret reconciles ExternalSecrets: it resolves the store,
// asks the engine for the target's content and writes it as the creation
// policy says, keeping the last good data when anything fails.
//
// A reconcile is the list of steps in syncSteps, over one scope; when to
// sync is decided by the scheduling policy in schedule.go.
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/steps"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/internal/targetindex"
)

// Reconciler reconciles ExternalSecrets.
type Reconciler struct {
	// Client reads ExternalSecrets and stores from the cache, and Secrets
	// and ConfigMaps from the API server.
	Client client.Client
	// DigestKeys make the status.dataHash of publishConnectionDetailsTo's
	// destinations; nil: plain SHA-256.
	DigestKeys *engine.DigestKeys
	// Meta reads object metadata from the cache: of Secrets only those
	// that carry Watchword's label (the targets it owns), and every
	// ConfigMap (the templates).
	Meta client.Reader
	// Named tells the resourceVersion of a Secret watched by name: the
	// targets of creationPolicy Merge.
	Named    storeaccess.SecretVersions
	Clients  *storeaccess.Clients
	Fetcher  *engine.Fetcher
	Recorder record.EventRecorder
	// Class is this instance's --controller-class.
	Class string
	// Clock is the only source of time of a reconcile.
	Clock engine.Clock
	// Metrics, if set, is told about each sync.
	Metrics Observer
	// StatusPeriod is how often at most a refresh that changed nothing
	// writes the status to move refreshTime (--status-refresh-period);
	// 0 means DefaultStatusPeriod.
	StatusPeriod time.Duration

	// started is the time of the first reconcile of this instance (after
	// it took the lease): the schedule's floor after a restart
	// (schedule.go).
	started   time.Time
	startOnce sync.Once

	// fresh holds the refreshes this instance made and what the
	// staleness metrics need (freshness.go).
	fresh freshness

	// ownWrites remembers what this instance last wrote to each target
	// ("ns/name" to ownWrite); writeTarget records it.
	ownWrites sync.Map

	// pending holds the status of a successful sync until the cache shows
	// it ("ns/name" to *v1alpha1.ExternalSecretStatus), so that a reconcile
	// that reads a stale ExternalSecret does not sync it again (a tuning
	// with ownWrite, target.go), and the finalizer sees its lease.
	pending sync.Map

	// notices holds the keys announced changed (notify.go).
	notices notices
	// ahead queues new work first (ahead.go).
	ahead ahead
	// statusPut writes statuses (statusput.go); without it, as in tests
	// without an API server, Client does.
	statusPut *statusPut
}

// Observer receives sync outcomes for metrics.
type Observer interface {
	ObserveSync(duration time.Duration, reason string)
	// ObserveRotation counts a rotation delivered from a store.
	ObserveRotation(provider, storeKind, store string)
}

// scope is one reconcile of one ExternalSecret: what the steps read and
// what they leave for the steps after them.
type scope struct {
	es     *v1alpha1.ExternalSecret
	before *v1alpha1.ExternalSecret
	now    metav1.Time

	// store is the resolved store; storeErr why it could not be.
	store    *storeaccess.Resolved
	storeErr error

	// inputs identifies everything a sync renders from but the remote
	// data: the spec's generation, the store and the template ConfigMaps.
	inputs string
	plan   schedule
	// mem is what this instance knows of the ExternalSecret beyond its
	// status.
	mem memory
	// refreshed: the store was read in this reconcile and the sync
	// succeeded; recorded: the status that tells so was written, or
	// needed no write.
	refreshed, recorded bool

	client  *engine.Client
	sources map[string]map[string]string
	// lease is the lease of a dataFrom vaultDynamic entry (lease.go).
	lease   leaseHeld
	result  *engine.Result
	written *writeResult
	// change is what the write was (changeRotated…), empty when the
	// target did not change.
	change string

	// publishedTo is the new status of publishConnectionDetailsTo;
	// publishErr the failure that matters most of publishing, if any.
	publishedTo []v1alpha1.PushSecretDestinationStatus
	publishErr  error

	// outcome is the reconcile's result when a step ends it early;
	// retry, when set, has it retried with backoff.
	outcome ctrl.Result
	retry   error
	// abandoned: the reconcile stopped because the operator is stopping;
	// its status is left as it was.
	abandoned bool
}

// syncSteps is a reconcile of an ExternalSecret, in order.
var syncSteps = []steps.Step[*Reconciler, *scope]{
	{Name: "store", Run: (*Reconciler).checkStore},
	{Name: "finalizer", Run: (*Reconciler).addFinalizer},
	{Name: "inputs", Run: (*Reconciler).readInputs},
	{Name: "schedule", Run: (*Reconciler).skipIfNotDue},
	{Name: "templates", Run: (*Reconciler).readTemplates},
	{Name: "client", Run: (*Reconciler).storeClient},
	{Name: "lease", Run: (*Reconciler).holdLease},
	{Name: "fetch", Run: (*Reconciler).fetch},
	{Name: "write", Run: (*Reconciler).write},
	{Name: "publish", Run: (*Reconciler).publish},
	{Name: "record", Run: (*Reconciler).record},
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
	store, storeErr := storeaccess.Resolve(ctx, r.Client, es.Namespace, es.Spec.SecretStoreRef)
	if !r.ours(store) {
		return ctrl.Result{}, nil
	}
	// The status this instance wrote last, if the cache is behind it: the
	// finalizer revokes the lease it records.
	r.catchUp(&es)
	if !es.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, failure.Redacted(r.finalize(ctx, &es))
	}
	r.startOnce.Do(func() { r.started = start })
	s := &scope{es: &es, before: es.DeepCopy(), now: metav1.NewTime(start), store: store, storeErr: storeErr}
	s.mem = memory{refreshed: r.fresh.refreshedAt(req.String(), es.UID), started: r.started, statusPeriod: r.StatusPeriod}
	res, err = r.run(ctx, s)
	res, err = r.writeStatus(ctx, s, res, err)
	r.dropUnrecorded(ctx, s)
	if !s.abandoned {
		kind, name := storeLabels(s)
		r.fresh.observe(req.String(), s.es, s.schedule(), kind, name, s.refreshed && s.recorded)
		if r.Metrics != nil {
			r.Metrics.ObserveSync(r.Clock.Now().Sub(start), outcomeReason(s, err))
		}
	}
	return res, err
}

// storeLabels names the ExternalSecret's store for the metrics: the
// resolved one, or the one its spec names when it could not be resolved.
func storeLabels(s *scope) (kind, name string) {
	if s.store != nil {
		st := s.store.Store
		return st.Kind, metrics.StoreLabel(st.Namespace, st.Name)
	}
	ref := s.es.Spec.SecretStoreRef
	if ref.Kind == v1alpha1.ClusterSecretStoreKind {
		return ref.Kind, ref.Name
	}
	return v1alpha1.SecretStoreKind, metrics.StoreLabel(s.es.Namespace, ref.Name)
}

// run runs the steps until one ends the reconcile or fails.
func (r *Reconciler) run(ctx context.Context, s *scope) (ctrl.Result, error) {
	failed, err := steps.Run(ctx, r, syncSteps, s)
	if err != nil {
		r.dropIssued(ctx, s)
	}
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The operator is stopping: the next start syncs it again;
		// nothing failed that the status should tell.
		s.abandoned = true
		return ctrl.Result{}, nil
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("sync step failed", "step", failed, "reason", failure.Classify(err).Reason)
		return r.fail(ctx, s, err)
	}
	return s.outcome, s.retry
}

// checkStore fails when the store could not be resolved.
func (r *Reconciler) checkStore(_ context.Context, s *scope) (bool, error) {
	return false, s.storeErr
}

// addFinalizer adds the finalizer where the target needs cleaning up.
func (r *Reconciler) addFinalizer(ctx context.Context, s *scope) (bool, error) {
	return false, r.ensureFinalizer(ctx, s.es)
}

// readInputs tells the versions of the sync's inputs other than the remote
// data, from caches only, and plans the reconcile.
func (r *Reconciler) readInputs(ctx context.Context, s *scope) (bool, error) {
	versions, err := r.templateVersions(ctx, s.es)
	if err != nil {
		return false, err
	}
	secretVersions, err := r.templateSecretVersions(ctx, s.es)
	if err != nil {
		return false, err
	}
	if secretVersions != "" {
		versions += ";" + secretVersions
	}
	s.inputs = fmt.Sprintf("%d|%s|%s", s.es.Generation, s.store.ID(), versions) + r.publishInputs(ctx, s.es)
	s.plan = newSchedule(s.es, s.now.Time, s.store.ID(), s.inputs, s.mem).
		withNotices(s.es, r.notices.of(s.es.Namespace+"/"+s.es.Name))
	return false, nil
}

// skipIfNotDue ends the reconcile when no sync is due, the target is as
// it was written and the last sync succeeded; it schedules the next
// refresh.
func (r *Reconciler) skipIfNotDue(ctx context.Context, s *scope) (bool, error) {
	due := s.plan.due() || leaseDue(s.es, s.now.Time)
	drifted := !due && r.targetDrifted(ctx, s.es)
	if !due && !drifted && !failing(s.es) {
		s.outcome = leaseWake(s.es, s.now.Time, s.plan.next(s.plan.lastRead))
		return true, nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("syncing", "due", due, "forced", s.plan.forced, "drifted", drifted, "inputsChanged", s.plan.inputsChanged,
		"notified", len(s.plan.notified))
	return false, nil
}

// readTemplates reads the templateFrom ConfigMaps a sync renders.
func (r *Reconciler) readTemplates(ctx context.Context, s *scope) (bool, error) {
	sources, err := r.templateSources(ctx, s.es)
	s.sources = sources
	return false, err
}

// storeClient gets the store's client from the client cache.
func (r *Reconciler) storeClient(ctx context.Context, s *scope) (bool, error) {
	c, err := r.Clients.Get(ctx, s.store)
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.store.Describe(), err)
	}
	s.client = c
	return false, nil
}

// fetch asks the engine for the target's content, through the shared read
// cache. Its calls take their turn in line when the store's call budget
// is short (engine.Turn): every ExternalSecret of the store is read once
// per round of the line, none starved.
func (r *Reconciler) fetch(ctx context.Context, s *scope) (bool, error) {
	if s.lease.kept {
		return false, nil
	}
	ctx = engine.WithTurn(ctx, engine.Turn{Key: s.es.Namespace + "/" + s.es.Name})
	res, err := r.Fetcher.Sync(ctx, engine.Input{Spec: &s.es.Spec, Store: s.store.ID(), Reader: s.client,
		TemplateSources: s.sources, MaxAge: s.plan.maxAge(), ReadAfter: s.plan.readAfter(), Leased: s.lease.leased})
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.store.Describe(), err)
	}
	s.result = res
	return false, nil
}

// write writes the target and tells in an event what the change was: a
// first sync, a rotation, a drift repair or an update for a new spec.
func (r *Reconciler) write(ctx context.Context, s *scope) (bool, error) {
	if s.lease.kept {
		return false, nil
	}
	drifted := r.targetDrifted(ctx, s.es)
	w, err := r.writeTarget(ctx, s.es, s.result)
	if err != nil {
		return false, err
	}
	s.written = w
	if w.action != "" {
		st := &s.es.Status
		s.change = classifyChange(st, s.plan, drifted, s.result.Versions)
		r.Recorder.Event(s.es, corev1.EventTypeNormal, s.change,
			changeMessage(s.change, targetWord(s.es)+" "+quote(targetindex.Name(s.es)), w.changedKeys, changedVersions(st.Versions, s.result.Versions)))
	}
	return false, nil
}

// record records the successful sync in the status, counts a rotation,
// and schedules the next refresh.
func (r *Reconciler) record(ctx context.Context, s *scope) (bool, error) {
	if s.change == changeRotated {
		s.es.Status.LastRotationTime = &s.now
		s.es.Status.LastRotatedKeys = rotatedKeys(s.written.changedKeys)
		if r.Metrics != nil {
			st := s.store.Store
			r.Metrics.ObserveRotation(s.client.Provider(), st.Kind, metrics.StoreLabel(st.Namespace, st.Name))
		}
	}
	if msg := findChanges(s.es.Status.Found, s.result.Found); msg != "" {
		r.Recorder.Event(s.es, corev1.EventTypeNormal, changeFindMatches, msg)
	}
	r.succeed(s)
	r.notices.consume(s.es.Namespace+"/"+s.es.Name, s.now.Time)
	s.es.Status.PublishedTo = s.publishedTo
	read := s.plan.lastRead
	if s.refreshed = s.plan.due(); s.refreshed {
		read = &s.now.Time
	}
	r.recordLease(ctx, s)
	s.outcome = leaseWake(s.es, s.now.Time, s.plan.next(read))
	if s.publishErr != nil {
		r.publishFailed(s)
	}
	return true, nil
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
	return wrote.ObservedGeneration != es.Generation || (cached != nil && !cached.Before(wrote.RefreshTime) && leaseCaughtUp(es.Status.Lease, wrote.Lease))
}

// forget drops what this instance remembers of an ExternalSecret once the
// cache shows it: its written status when the cache has caught up, and
// everything when it is gone.
func (r *Reconciler) forget(es *v1alpha1.ExternalSecret, deleted bool) {
	key := es.Namespace + "/" + es.Name
	if deleted {
		r.pending.Delete(key)
		r.ownWrites.Delete(ownKey(es))
		r.notices.drop(key)
		r.fresh.drop(key)
		metrics.Leases.Drop(key)
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

// schedule is the reconcile's plan; for a reconcile that ended before its
// inputs were read (readInputs), a plan of the refresh times alone.
func (s *scope) schedule() schedule {
	if s.plan.now.IsZero() {
		return newSchedule(s.es, s.now.Time, "", s.es.Status.InputsVersion, s.mem)
	}
	return s.plan
}

// templateNames lists the templateFrom ConfigMaps, each once.
func templateNames(es *v1alpha1.ExternalSecret) []string {
	return templateRefNames(es, func(f v1alpha1.TemplateFrom) *v1alpha1.TemplateRef { return f.ConfigMap })
}

// templateSecretNames lists the templateFrom Secrets, each once.
func templateSecretNames(es *v1alpha1.ExternalSecret) []string {
	return templateRefNames(es, func(f v1alpha1.TemplateFrom) *v1alpha1.TemplateRef { return f.Secret })
}

func templateRefNames(es *v1alpha1.ExternalSecret, ref func(v1alpha1.TemplateFrom) *v1alpha1.TemplateRef) []string {
	t := es.Spec.Target.Template
	if t == nil {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, from := range t.TemplateFrom {
		if r := ref(from); r != nil && !seen[r.Name] {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	}
	return names
}

func templateNotFound(es *v1alpha1.ExternalSecret, name string) error {
	return failure.Terminalf(failure.TemplateNotFound,
		"template ConfigMap %q not found in namespace %q (spec.target.template.templateFrom)", name, es.Namespace)
}

// templateVersions tells the resourceVersions of the templateFrom
// ConfigMaps from the metadata cache, without reading them.
func (r *Reconciler) templateVersions(ctx context.Context, es *v1alpha1.ExternalSecret) (string, error) {
	var versions []string
	for _, name := range templateNames(es) {
		if isConfigMap(es) && name == targetindex.Name(es) {
			// Each write of the target would be a new input, rendered
			// into the next write: a loop that feeds its own output.
			return "", failure.Terminalf(failure.TemplateError,
				"templateFrom ConfigMap %q is this ExternalSecret's own target: a template cannot read what it writes; keep the templates in another ConfigMap or a Secret (the target keeps its data)", name)
		}
		var m metav1.PartialObjectMetadata
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		if err := r.Meta.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &m); err != nil {
			if apierrors.IsNotFound(err) {
				return "", templateNotFound(es, name)
			}
			return "", fmt.Errorf("reading the metadata of template ConfigMap %q: %w", name, err)
		}
		versions = append(versions, name+"="+m.ResourceVersion)
	}
	return strings.Join(versions, ","), nil
}

// templateSources reads the templateFrom ConfigMaps from the
// ExternalSecret's own namespace, from the API server (their contents are
// not cached).
func (r *Reconciler) templateSources(ctx context.Context, es *v1alpha1.ExternalSecret) (map[string]map[string]string, error) {
	names := templateNames(es)
	secrets := templateSecretNames(es)
	if len(names) == 0 && len(secrets) == 0 {
		return nil, nil
	}
	out := make(map[string]map[string]string, len(names)+len(secrets))
	if err := r.addTemplateSecrets(ctx, es, out); err != nil {
		return nil, err
	}
	for _, name := range names {
		var cm corev1.ConfigMap
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: name}, &cm); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, templateNotFound(es, name)
			}
			return nil, fmt.Errorf("reading template ConfigMap %q: %w", name, err)
		}
		out[name] = cm.Data
	}
	return out, nil
}

// outcomeReason is the reason label of a reconcile for metrics: the reason
// its Ready condition shows, or the error model's reason of an error that
// ended it before the status.
func outcomeReason(s *scope, err error) string {
	if err != nil {
		return string(failure.Classify(err).Reason)
	}
	if c := conditions.FindES(s.es.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return "Unknown"
}
