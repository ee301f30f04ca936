package externalsecret

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
	fakeprovider "github.com/watchword-dev/watchword/internal/provider/fake"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// These tests drive the reconciler against controller-runtime's fake
// client, with interceptors for what a real API server and cache do at the
// worst moment: a conflicting status write, a cache that still shows the
// status before the last write, and the watch event of our own write.

type testClock struct{ t time.Time }

func (c *testClock) Now() time.Time { return c.t }

// noNamed is the Merge targets' watch by name; these tests use Owner
// targets only.
type noNamed struct{}

func (noNamed) ResourceVersion(context.Context, provider.NamespacedName) (string, bool, error) {
	return "", false, nil
}

// counts counts the API calls the reconciler makes.
type counts struct {
	secretWrites, secretReads, statusWrites atomic.Int32
	// conflictOnce makes the next status write fail with a conflict.
	conflictOnce atomic.Bool
	// staleES, when set, is what a Get of the ExternalSecret returns: the
	// object as a lagging cache shows it.
	staleES atomic.Pointer[v1alpha1.ExternalSecret]
	// refuseStatus, when set, is the API server's answer to a status
	// write: an error refuses it.
	refuseStatus func(*v1alpha1.ExternalSecret) error
}

type harness struct {
	r      *Reconciler
	c      client.Client
	n      *counts
	clock  *testClock
	reads  *atomic.Int32
	req    reconcile.Request
	events *record.FakeRecorder
}

func newHarness(t *testing.T, value string) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	store := &v1alpha1.SecretStore{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "store", UID: "store-uid", Generation: 1},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{
			Data: []v1alpha1.FakeProviderData{{Key: "db", Value: value}},
		}}},
	}
	es := &v1alpha1.ExternalSecret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "es", UID: "es-uid", Generation: 1},
		Spec: v1alpha1.ExternalSecretSpec{
			SecretStoreRef: v1alpha1.StoreRef{Name: "store", Kind: v1alpha1.SecretStoreKind},
			Data:           []v1alpha1.ExternalSecretData{{SecretKey: "password", RemoteRef: v1alpha1.RemoteReference{Key: "db"}}},
		},
	}
	n := &counts{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(store, es).
		WithStatusSubresource(&v1alpha1.ExternalSecret{}, &v1alpha1.SecretStore{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if e, ok := obj.(*v1alpha1.ExternalSecret); ok {
					if stale := n.staleES.Load(); stale != nil {
						stale.DeepCopyInto(e)
						return nil
					}
				}
				if _, ok := obj.(*corev1.Secret); ok {
					n.secretReads.Add(1)
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					n.secretWrites.Add(1)
				}
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					n.secretWrites.Add(1)
				}
				return c.Update(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				n.statusWrites.Add(1)
				if n.conflictOnce.CompareAndSwap(true, false) {
					return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "externalsecrets"}, obj.GetName(), errors.New("the object has been modified"))
				}
				if es, ok := obj.(*v1alpha1.ExternalSecret); ok && n.refuseStatus != nil {
					if err := n.refuseStatus(es); err != nil {
						return err
					}
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	clock := &testClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	reads := &atomic.Int32{}
	events := record.NewFakeRecorder(100)
	reg := provider.Registry{"fake": fakeprovider.Factory{}}
	clients := storeaccess.NewClients(reg, noNamed{}, c, nil, nil)
	clients.Clock = clock
	r := &Reconciler{
		Client: c, Meta: c, Named: noNamed{}, Clients: clients, Recorder: events, Clock: clock,
		Fetcher: engine.NewFetcher(clock, func(_ string, k int) { reads.Add(int32(k)) }),
	}
	return &harness{r: r, c: c, n: n, clock: clock, reads: reads, events: events,
		req: reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "app", Name: "es"}}}
}

func (h *harness) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := h.r.Reconcile(context.Background(), h.req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (h *harness) es(t *testing.T) *v1alpha1.ExternalSecret {
	t.Helper()
	var es v1alpha1.ExternalSecret
	if err := h.c.Get(context.Background(), h.req.NamespacedName, &es); err != nil {
		t.Fatal(err)
	}
	return &es
}

func TestReconcileSyncsThenOnlySchedules(t *testing.T) {
	h := newHarness(t, "v1")
	res := h.reconcile(t)
	var s corev1.Secret
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil {
		t.Fatalf("target not written: %v", err)
	}
	if string(s.Data["password"]) != "v1" {
		t.Fatalf("target data = %q", s.Data["password"])
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 2*defaultRefresh {
		t.Fatalf("next refresh in %v, want within two intervals", res.RequeueAfter)
	}
	es := h.es(t)
	ready := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
	inSync := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionInSync)
	if ready == nil || ready.Status != metav1.ConditionTrue || inSync == nil || inSync.Status != metav1.ConditionTrue || inSync.LastSyncTime == nil {
		t.Fatalf("conditions = %+v", es.Status.Conditions)
	}
	if ready.Message == inSync.Message {
		t.Errorf("Ready and InSync say the same: %q", ready.Message)
	}
	if conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		t.Error("a synced ExternalSecret is not stalled")
	}

	// Nothing is due ten minutes later: no provider read, no Secret read
	// or write, no status write.
	h.clock.t = h.clock.t.Add(10 * time.Minute)
	reads, writes, secretReads, statusWrites := h.reads.Load(), h.n.secretWrites.Load(), h.n.secretReads.Load(), h.n.statusWrites.Load()
	h.reconcile(t)
	if h.reads.Load() != reads || h.n.secretWrites.Load() != writes || h.n.secretReads.Load() != secretReads || h.n.statusWrites.Load() != statusWrites {
		t.Errorf("a reconcile with nothing due read the store %d, read the Secret %d, wrote it %d and the status %d times",
			h.reads.Load()-reads, h.n.secretReads.Load()-secretReads, h.n.secretWrites.Load()-writes, h.n.statusWrites.Load()-statusWrites)
	}
}

func TestOwnWriteEventDoesNotQueue(t *testing.T) {
	h := newHarness(t, "v1")
	h.reconcile(t)
	var s corev1.Secret
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil {
		t.Fatal(err)
	}
	// The fake client's Secrets carry no owner index; queue by hand what
	// the metadata watch would, and see whether targetChanged adds it.
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.r.targetChanged(context.Background(), &s, q, false)
	if q.Len() != 0 {
		t.Fatalf("the watch event of our own write queued %d requests", q.Len())
	}
	// Someone else's edit (a new resourceVersion) is not ours.
	s.Data["password"] = []byte("tampered")
	if err := h.c.Update(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	if w, _ := h.r.ownWrites.Load("app/es"); w.(ownWrite).resourceVersion == s.ResourceVersion {
		t.Fatal("an edit by someone else was recorded as our write")
	}
}

func TestStatusConflictRetriesWithoutRewritingTarget(t *testing.T) {
	h := newHarness(t, "v1")
	h.n.conflictOnce.Store(true)
	res, err := h.r.Reconcile(context.Background(), h.req)
	if err != nil {
		t.Fatalf("a status conflict is retried, not an error: %v", err)
	}
	if res.RequeueAfter != conflictRetry {
		t.Fatalf("requeue after %v, want %v", res.RequeueAfter, conflictRetry)
	}
	if h.n.secretWrites.Load() != 1 {
		t.Fatalf("target written %d times, want once", h.n.secretWrites.Load())
	}
	// The retry finds the target as it wrote it: it records the status
	// without reading or writing the Secret again.
	reads := h.n.secretReads.Load()
	h.reconcile(t)
	if h.n.secretWrites.Load() != 1 || h.n.secretReads.Load() != reads {
		t.Errorf("the retry wrote the target %d times and read it %d times, want neither", h.n.secretWrites.Load()-1, h.n.secretReads.Load()-reads)
	}
	if c := conditions.FindES(h.es(t).Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("status not recorded after the retry: %+v", c)
	}
}

func TestStaleCacheDoesNotSyncAgain(t *testing.T) {
	h := newHarness(t, "v1")
	stale := h.es(t) // as it was before the first sync
	h.reconcile(t)
	reads, writes, statusWrites := h.reads.Load(), h.n.secretWrites.Load(), h.n.statusWrites.Load()
	// The cache still shows the ExternalSecret without its status.
	h.n.staleES.Store(stale)
	h.clock.t = h.clock.t.Add(time.Second)
	h.reconcile(t)
	if h.reads.Load() != reads || h.n.secretWrites.Load() != writes || h.n.statusWrites.Load() != statusWrites {
		t.Errorf("a stale cache made the reconcile read the store %d, write the target %d and the status %d times",
			h.reads.Load()-reads, h.n.secretWrites.Load()-writes, h.n.statusWrites.Load()-statusWrites)
	}
}

func TestTerminalFailureStallsAndKeepsTarget(t *testing.T) {
	h := newHarness(t, "v1")
	h.reconcile(t)
	es := h.es(t)
	es.Spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: map[string]string{"password": "{{ .data.password | nosuchfunc }}"}}
	es.Generation = 2
	if err := h.c.Update(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	res, err := h.r.Reconcile(context.Background(), h.req)
	if err != nil {
		t.Fatalf("a terminal failure is not retried with backoff, got %v", err)
	}
	// Not retried with backoff, but looked at again at the refresh
	// interval: the store's data, which no watch sees, may be the cause.
	if want := refreshInterval(es); res.RequeueAfter != want {
		t.Errorf("requeue after %v, want the refresh interval %v", res.RequeueAfter, want)
	}
	es = h.es(t)
	stalled := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled)
	ready := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady)
	inSync := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionInSync)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != string(failure.TemplateError) ||
		!strings.Contains(stalled.Message, "checked again every "+refreshInterval(es).String()) {
		t.Fatalf("Stalled = %+v", stalled)
	}
	if ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, `Secret "es" keeps the data last synced at`) {
		t.Errorf("Ready = %+v", ready)
	}
	if inSync.Status != metav1.ConditionFalse || inSync.LastSyncTime == nil {
		t.Errorf("InSync = %+v, want False and the time of the last good sync", inSync)
	}
	if es.Status.Phase != v1alpha1.PhaseFailed {
		t.Errorf("phase = %s", es.Status.Phase)
	}
	var s corev1.Secret
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "es"}, &s); err != nil || string(s.Data["password"]) != "v1" {
		t.Errorf("the target lost its last good data: %v %q", err, s.Data["password"])
	}
}

func TestRetriedFailureIsReturnedRedacted(t *testing.T) {
	h := newHarness(t, "v1")
	es := h.es(t)
	es.Spec.Data[0].RemoteRef.Key = "missing"
	if err := h.c.Update(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	_, err := h.r.Reconcile(context.Background(), h.req)
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("a missing key is retried with backoff, got %v", err)
	}
	if c := failure.Classify(err); c.Reason != failure.NotFound || c.Terminal {
		t.Errorf("class = %+v", c)
	}
	es = h.es(t)
	if es.Status.Phase != v1alpha1.PhaseFailing || conditions.FindES(es.Status.Conditions, v1alpha1.ConditionStalled) != nil {
		t.Errorf("phase %s, conditions %+v", es.Status.Phase, es.Status.Conditions)
	}
}
