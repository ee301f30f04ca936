package storewatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/storeaccess"
)

// feed is a fake change feed: the test tells each Watch call what to do.
// It counts the calls and the watches running at once. As the contract
// says, a watch that is in place calls changed(nil) first, unless quiet.
type feed struct {
	mu      sync.Mutex
	calls   int
	active  int
	maxSeen int
	// fail, while > 0, makes that many Watch calls break at once.
	fail int
	// quiet watches do not tell that they are in place.
	quiet bool
	// changes are sent by the running watch.
	changes chan []string
}

func newFeed() *feed { return &feed{changes: make(chan []string, 16)} }

func (f *feed) Watch(ctx context.Context, changed func([]string)) error {
	f.mu.Lock()
	f.calls++
	f.active++
	f.maxSeen = max(f.maxSeen, f.active)
	broken := f.fail > 0
	if broken {
		f.fail--
	}
	quiet := f.quiet
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	if broken {
		return fmt.Errorf("the feed broke: %w", engine.ErrUnavailable)
	}
	if !quiet {
		changed(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case keys := <-f.changes:
			changed(keys)
		}
	}
}

func (f *feed) stats() (calls, active, maxSeen int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.active, f.maxSeen
}

type reader struct{}

func (reader) GetSecret(context.Context, engine.Ref) (engine.Object, error) {
	return engine.Object{}, nil
}

// clients hands out one client per store, with the feed as its watcher
// (nil: a provider that cannot watch); rebuild makes a new client.
type clients struct {
	mu     sync.Mutex
	feed   *feed
	client *engine.Client
}

func (c *clients) Get(context.Context, *storeaccess.Resolved) (*engine.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		ops := engine.Ops{Reader: reader{}}
		if c.feed != nil {
			ops.Watcher = c.feed
		}
		c.client, _ = engine.NewClient("fake", ops)
	}
	return c.client, nil
}

func (c *clients) rebuild() {
	c.mu.Lock()
	c.client = nil
	c.mu.Unlock()
}

type notifier struct {
	mu    sync.Mutex
	calls [][]string
	// refuse, while > 0, makes that many notifications fail, as when the
	// ExternalSecret controller is not running yet.
	refuse int
}

func (n *notifier) Notify(_ context.Context, kind, ns, name string, keys []string) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refuse > 0 {
		n.refuse--
		return 0, errors.New("the ExternalSecret controller is not running")
	}
	if keys == nil {
		keys = []string{"<nil>"}
	}
	n.calls = append(n.calls, append([]string{kind + "/" + ns + "/" + name}, keys...))
	return 1, nil
}

func (n *notifier) seen() [][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

type fixture struct {
	loop     *Loop
	k8s      client.Client
	feed     *feed
	clients  *clients
	notifier *notifier
	reads    *readers
}

type readers struct {
	mu  sync.Mutex
	set map[string]bool
}

func (r *readers) fn(_ context.Context, kind, ns, name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[kind+"/"+ns+"/"+name], nil
}

func (r *readers) put(key string, v bool) {
	r.mu.Lock()
	r.set[key] = v
	r.mu.Unlock()
}

var storeReq = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "s"}}

func setup(t *testing.T, canWatch bool, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	if objs == nil {
		objs = []client.Object{&v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", UID: "u1", Generation: 1}}}
	}
	f := &fixture{k8s: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), notifier: &notifier{},
		reads: &readers{set: map[string]bool{"SecretStore/team/s": true}}}
	f.clients = &clients{}
	if canWatch {
		f.feed = newFeed()
		f.clients.feed = f.feed
	}
	f.loop = &Loop{Reader: f.k8s, Clients: f.clients, Notifier: f.notifier, ReadsFrom: f.reads.fn,
		Backoff: func() wait.Backoff {
			return wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 100, Cap: 50 * time.Millisecond}
		},
		Settle: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.loop.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *fixture) reconcile(t *testing.T) {
	t.Helper()
	eventually(t, func() bool {
		res, err := f.loop.Reconcile(context.Background(), storeReq)
		if err != nil {
			t.Fatal(err)
		}
		// One second: the loop had not started yet.
		return res.RequeueAfter != time.Second
	}, "the loop starts")
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) state(t *testing.T) conditions.WatchState {
	t.Helper()
	s, _ := f.loop.State(v1alpha1.SecretStoreKind, "team", "s")
	return s
}

var anything = []string{"SecretStore/team/s", "<nil>"}

func TestChangedKeysReachNotify(t *testing.T) {
	f := setup(t, true)
	f.reconcile(t)
	f.feed.changes <- []string{"db/creds"}
	f.feed.changes <- nil
	eventually(t, func() bool { return len(f.notifier.seen()) == 3 }, "the start and both changes are notified")
	got := f.notifier.seen()
	if !slices.Equal(got[0], anything) || !slices.Equal(got[1], []string{"SecretStore/team/s", "db/creds"}) || !slices.Equal(got[2], anything) {
		t.Fatalf("notifications %v, want anything (the watch in place), db/creds, then anything (nil) of the store", got)
	}
	eventually(t, func() bool { return f.state(t).Watched }, "the store is said to be watched")
	if s := f.state(t); s.Reason != conditions.WatchActive {
		t.Fatalf("state %+v, want %s", s, conditions.WatchActive)
	}
}

// TestAWatchInPlaceIsWatchedAndRefreshesEverything: the first call of a
// watch says it is in place. The store is watched from then on, not after
// some settle time; and every ExternalSecret of the store refreshes, since
// a change made before the watch is not told by it, even when a watcher's
// first call names a key.
func TestAWatchInPlaceIsWatchedAndRefreshesEverything(t *testing.T) {
	f := setup(t, true)
	f.loop.Settle = time.Hour
	f.feed.quiet = true
	f.reconcile(t)
	eventually(t, func() bool { _, active, _ := f.feed.stats(); return active == 1 }, "the watch runs")
	if s := f.state(t); s.Watched || s.Reason != conditions.WatchStarting {
		t.Fatalf("state %+v before the watch says it is in place, want not watched, %s", s, conditions.WatchStarting)
	}
	f.feed.changes <- []string{"db/creds"}
	eventually(t, func() bool { return f.state(t).Watched }, "the store is said to be watched once the watch is in place")
	if got := f.notifier.seen(); len(got) != 1 || !slices.Equal(got[0], anything) {
		t.Fatalf("notifications %v, want one of anything (nil): what changed before the watch is not known", got)
	}
	f.feed.changes <- []string{"db/creds"}
	eventually(t, func() bool { return len(f.notifier.seen()) == 2 }, "the next change is notified")
	if got := f.notifier.seen(); !slices.Equal(got[1], []string{"SecretStore/team/s", "db/creds"}) {
		t.Fatalf("notifications %v, want db/creds second", got)
	}
}

// TestANotificationTheControllerCouldNotTakeIsMadeAgain: the
// notification of a watch's start, refused because the ExternalSecret
// controller does not run yet, is made again.
func TestANotificationTheControllerCouldNotTakeIsMadeAgain(t *testing.T) {
	f := setup(t, true)
	f.notifier.refuse = 1
	f.reconcile(t)
	eventually(t, func() bool { return len(f.notifier.seen()) == 1 }, "the refused notification is made again")
	if got := f.notifier.seen(); !slices.Equal(got[0], anything) {
		t.Fatalf("notifications %v, want anything (nil)", got)
	}
}

func TestABrokenWatchIsStartedAgainAfterABackoff(t *testing.T) {
	f := setup(t, true)
	f.feed.fail = 3
	f.reconcile(t)
	eventually(t, func() bool { calls, active, _ := f.feed.stats(); return calls == 4 && active == 1 }, "three broken watches and a fourth that holds")
	eventually(t, func() bool { return f.state(t).Watched }, "the store is said to be watched once the watch holds")
	f.feed.changes <- []string{"k"}
	eventually(t, func() bool { return len(f.notifier.seen()) == 2 }, "the restarted watch's start and change are notified")
}

func TestAFeedThatMayNotWatchSaysSo(t *testing.T) {
	f := setup(t, true)
	f.feed.fail = 1000
	f.reconcile(t)
	eventually(t, func() bool { return f.state(t).Reason == conditions.WatchBroken }, "the state says the watch is retried")
	if s := f.state(t); s.Watched {
		t.Fatalf("state %+v: a broken watch is not watching", s)
	}
}

func TestARemovedStoreEndsItsWatch(t *testing.T) {
	f := setup(t, true)
	f.reconcile(t)
	eventually(t, func() bool { _, active, _ := f.feed.stats(); return active == 1 }, "the watch runs")
	if err := f.k8s.Delete(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if _, active, _ := f.feed.stats(); active != 0 || f.loop.Watching() != 0 {
		t.Fatalf("after the store's deletion: %d watches running, want none", active)
	}
	if _, ok := f.loop.State(v1alpha1.SecretStoreKind, "team", "s"); ok {
		t.Fatal("a deleted store keeps a watch state")
	}
}

func TestAStoreNobodyReadsFromIsNotWatched(t *testing.T) {
	f := setup(t, true)
	f.reads.put("SecretStore/team/s", false)
	f.reconcile(t)
	if calls, _, _ := f.feed.stats(); calls != 0 {
		t.Fatalf("%d watches started for a store nobody reads from, want none", calls)
	}
	if s := f.state(t); s.Watched || s.Reason != conditions.WatchUnneeded {
		t.Fatalf("state %+v, want not watched, %s", s, conditions.WatchUnneeded)
	}
	// Once an ExternalSecret reads from it, it is; when none does any
	// more, the watch stops.
	f.reads.put("SecretStore/team/s", true)
	f.reconcile(t)
	eventually(t, func() bool { _, active, _ := f.feed.stats(); return active == 1 }, "the watch runs")
	f.reads.put("SecretStore/team/s", false)
	f.reconcile(t)
	if _, active, _ := f.feed.stats(); active != 0 {
		t.Fatalf("%d watches run for a store nobody reads from any more, want none", active)
	}
}

func TestAProviderWithoutAFeedIsNotWatched(t *testing.T) {
	f := setup(t, false)
	f.reconcile(t)
	if s := f.state(t); s.Watched || s.Reason != conditions.WatchUnsupported {
		t.Fatalf("state %+v, want not watched, %s", s, conditions.WatchUnsupported)
	}
	if f.loop.Watching() != 0 {
		t.Fatal("a store that cannot watch has a watch")
	}
}

func TestOneWatchPerStore(t *testing.T) {
	f := setup(t, true)
	f.reconcile(t)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = f.loop.Reconcile(context.Background(), storeReq)
		}()
	}
	wg.Wait()
	// A new client (new credentials) replaces the watch: the old one
	// ends before the new one starts.
	f.clients.rebuild()
	f.reconcile(t)
	eventually(t, func() bool { calls, active, _ := f.feed.stats(); return calls == 2 && active == 1 }, "the replacing watch runs")
	if _, _, maxSeen := f.feed.stats(); maxSeen != 1 {
		t.Fatalf("%d watches of the store ran at once, want one", maxSeen)
	}
	// The replacing watch announces that anything may have changed
	// between the two, as the first did at its start.
	eventually(t, func() bool {
		n := 0
		for _, c := range f.notifier.seen() {
			if slices.Equal(c, anything) {
				n++
			}
		}
		return n == 2
	}, "the replacing watch notifies a possible gap")
}

func TestBrokenStateNamesAPermissionRefusal(t *testing.T) {
	s := brokenState(fmt.Errorf("may not list: %w", engine.ErrPermissionDenied), time.Second)
	if s.Reason != conditions.WatchDenied || s.Watched {
		t.Fatalf("state %+v, want %s", s, conditions.WatchDenied)
	}
	if s := brokenState(errors.New("boom"), time.Second); s.Reason != conditions.WatchBroken {
		t.Fatalf("state %+v, want %s", s, conditions.WatchBroken)
	}
}

func TestANewReaderQueuesItsStoreOnlyWhileTheWatchIsNotSettled(t *testing.T) {
	reader := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "es"}}
	reader.Spec.SecretStoreRef = v1alpha1.StoreRef{Kind: v1alpha1.SecretStoreKind, Name: "s"}
	queued := func(l *Loop, ev func(handler.Funcs, workqueue.TypedRateLimitingInterface[reconcile.Request])) int {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		ev(l.readers(), q)
		return q.Len()
	}
	create := func(h handler.Funcs, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Create(context.Background(), event.CreateEvent{Object: reader}, q)
	}
	remove := func(h handler.Funcs, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Delete(context.Background(), event.DeleteEvent{Object: reader}, q)
	}

	f := setup(t, true)
	if n := queued(f.loop, create); n != 1 {
		t.Fatalf("a new reader of a store not yet looked at queued %d requests, want 1", n)
	}
	f.reads.put("SecretStore/team/s", false)
	f.reconcile(t)
	if n := queued(f.loop, create); n != 1 {
		t.Fatalf("a new reader of a store nobody read from queued %d requests, want 1", n)
	}
	f.reads.put("SecretStore/team/s", true)
	f.reconcile(t)
	eventually(t, func() bool { _, active, _ := f.feed.stats(); return active == 1 }, "the watch runs")
	if n := queued(f.loop, create); n != 0 {
		t.Fatalf("a new reader of a watched store queued %d requests, want none", n)
	}
	if n := queued(f.loop, remove); n != 1 {
		t.Fatalf("a reader's deletion queued %d requests, want 1 (the watch may no longer be needed)", n)
	}

	unsupported := setup(t, false)
	unsupported.reconcile(t)
	if n := queued(unsupported.loop, create); n != 0 {
		t.Fatalf("a new reader of a store that cannot watch queued %d requests, want none", n)
	}
}

// storeWithReady is the fixture's store with its Ready condition's status
// (none when empty) and a ChangesWatched condition of the given reason.
func storeWithReady(ready metav1.ConditionStatus, watch string) *v1alpha1.SecretStore {
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", UID: "u1", Generation: 1}}
	if ready != "" {
		s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: ready, Reason: "R"})
	}
	s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: conditions.ChangesWatched, Status: metav1.ConditionFalse, Reason: watch})
	return s
}

// updated runs a store's update through the loop's predicate and handler
// and returns how many requests it queued.
func updated(l *Loop, old, cur *v1alpha1.SecretStore) int {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	e := event.UpdateEvent{ObjectOld: old, ObjectNew: cur}
	if storeChanged().Update(e) {
		l.stores().Update(context.Background(), e, q)
	}
	return q.Len()
}

// TestAStoreThatTurnsReadyIsLookedAtAgain: a store whose Ready condition
// turns True (its plugin came up after it was created) is queued at once,
// so that its watch starts rather than wait for the recheck; a change of
// its ChangesWatched condition alone queues nothing.
func TestAStoreThatTurnsReadyIsLookedAtAgain(t *testing.T) {
	f := setup(t, true)
	if n := updated(f.loop, storeWithReady(metav1.ConditionFalse, conditions.WatchStoreNotReady), storeWithReady(metav1.ConditionTrue, conditions.WatchStoreNotReady)); n != 1 {
		t.Fatalf("a store whose Ready turned True queued %d requests, want 1", n)
	}
	if n := updated(f.loop, storeWithReady("", ""), storeWithReady(metav1.ConditionTrue, "")); n != 1 {
		t.Fatalf("a store that turned Ready for the first time queued %d requests, want 1", n)
	}
	if n := updated(f.loop, storeWithReady(metav1.ConditionTrue, conditions.WatchStarting), storeWithReady(metav1.ConditionTrue, conditions.WatchActive)); n != 0 {
		t.Fatalf("a change of ChangesWatched alone queued %d requests, want none", n)
	}
}

// TestABrokenWatchStartsAgainAtOnceWhenItsStoreTurnsReady: a watch that
// broke (its plugin went away) waits in its backoff; once the store's
// Ready condition turns True again (the plugin is back), it starts again
// at once instead of at the end of the backoff.
func TestABrokenWatchStartsAgainAtOnceWhenItsStoreTurnsReady(t *testing.T) {
	f := setup(t, true)
	f.loop.Backoff = func() wait.Backoff { return wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 100, Cap: time.Hour} }
	f.feed.fail = 1
	f.reconcile(t)
	eventually(t, func() bool { return f.state(t).Reason == conditions.WatchBroken }, "the watch breaks and waits in its backoff")
	if n := updated(f.loop, storeWithReady(metav1.ConditionFalse, conditions.WatchBroken), storeWithReady(metav1.ConditionTrue, conditions.WatchBroken)); n != 1 {
		t.Fatalf("a store whose Ready turned True queued %d requests, want 1", n)
	}
	eventually(t, func() bool { calls, active, _ := f.feed.stats(); return calls == 2 && active == 1 }, "the watch starts again before the end of its backoff")
	eventually(t, func() bool { return f.state(t).Watched }, "the store is said to be watched again")
}
