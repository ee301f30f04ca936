package externalsecret

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
)

// These tests drive the write decision and the schedule with the injected
// clock: a reconcile runs at each time the previous one asked to be
// queued again, as the work queue would run it.

// withInterval gives the harness's ExternalSecret a refresh interval and
// the reconciler a status period.
func withInterval(t *testing.T, h *harness, interval, period time.Duration) {
	t.Helper()
	es := h.es(t)
	es.Spec.RefreshInterval = &metav1.Duration{Duration: interval}
	if err := h.c.Update(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	h.r.StatusPeriod = period
}

// statusWrite is one status write seen by the test: the refreshTime it
// recorded and when it was made.
type statusWrite struct{ at, refreshTime time.Time }

// runUntil runs the reconciles the schedule asks for until the clock
// passes end, and returns the status writes made and the provider reads.
func runUntil(t *testing.T, h *harness, end time.Time) (writes []statusWrite, reads int32) {
	t.Helper()
	startReads := h.reads.Load()
	for {
		before := h.n.statusWrites.Load()
		res := h.reconcile(t)
		if h.n.statusWrites.Load() != before {
			writes = append(writes, statusWrite{at: h.clock.t, refreshTime: h.es(t).Status.RefreshTime.Time})
		}
		if res.RequeueAfter <= 0 {
			t.Fatalf("no next refresh scheduled at %v", h.clock.t)
		}
		next := h.clock.t.Add(res.RequeueAfter)
		if next.After(end) {
			return writes, h.reads.Load() - startReads
		}
		h.clock.t = next
	}
}

func TestUnchangedRefreshWritesNothingThenOnceAPeriodAtItsPhase(t *testing.T) {
	h := newHarness(t, "v1")
	const interval, period = time.Minute, 10 * time.Minute
	withInterval(t, h, interval, period)
	h.reconcile(t)
	synced := h.es(t).Status.RefreshTime.Time
	writesAfterSync := h.n.statusWrites.Load()

	// The first period after the sync: a refresh every minute, each reading
	// the store, and not one status write.
	writes, reads := runUntil(t, h, synced.Add(period))
	if len(writes) != 0 {
		t.Fatalf("refreshes that changed nothing wrote the status %d times in the first period after the sync: %+v", len(writes), writes)
	}
	if reads < int32(period/interval)-2 {
		t.Fatalf("the store was read %d times in %v at a %v interval: the refreshes did not run", reads, period, interval)
	}

	// Three more periods: exactly one write per period, at the
	// ExternalSecret's phase point, recording that point.
	writes, _ = runUntil(t, h, synced.Add(4*period))
	phase := statusPhase(h.es(t), period)
	if len(writes) != 3 {
		t.Fatalf("%d status writes in three periods after the first, want 3: %+v", len(writes), writes)
	}
	for i, w := range writes {
		if got := time.Duration(w.refreshTime.UnixNano() % int64(period)); got != phase {
			t.Errorf("write %d recorded refreshTime %v, at phase %v of the period; want the ExternalSecret's phase %v", i, w.refreshTime, got, phase)
		}
		if w.at.Sub(w.refreshTime) < 0 || w.at.Sub(w.refreshTime) > interval {
			t.Errorf("write %d at %v records %v: want the phase point at most one refresh interval before the refresh", i, w.at, w.refreshTime)
		}
		if i > 0 && w.refreshTime.Sub(writes[i-1].refreshTime) != period {
			t.Errorf("writes %d and %d record %v apart, want one period (%v)", i-1, i, w.refreshTime.Sub(writes[i-1].refreshTime), period)
		}
	}
	if writes[0].refreshTime.Before(synced.Add(period)) {
		t.Errorf("first coarse write records %v, within one period of the sync at %v", writes[0].refreshTime, synced)
	}
	if got := h.n.statusWrites.Load() - writesAfterSync; got != 3 {
		t.Errorf("status writes after the sync: %d, want 3", got)
	}
	// InSync's lastSyncTime says the same as refreshTime.
	es := h.es(t)
	if in := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionInSync); in == nil || in.LastSyncTime == nil || !in.LastSyncTime.Equal(es.Status.RefreshTime) {
		t.Errorf("InSync %+v, refreshTime %v", in, es.Status.RefreshTime)
	}
}

func TestChangeWritesTheStatusAtOnceWithTheExactRefreshTime(t *testing.T) {
	h := newHarness(t, "v1")
	withInterval(t, h, time.Minute, time.Hour)
	h.reconcile(t)
	// Five quiet refreshes, then the store's data changes.
	runUntil(t, h, h.clock.t.Add(5*time.Minute))
	var store v1alpha1.SecretStore
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "store"}, &store); err != nil {
		t.Fatal(err)
	}
	store.Spec.Fake.Data[0].Value = "v2"
	store.Generation++
	if err := h.c.Update(context.Background(), &store); err != nil {
		t.Fatal(err)
	}
	before := h.n.statusWrites.Load()
	h.clock.t = h.clock.t.Add(time.Second)
	h.reconcile(t)
	if got := h.n.statusWrites.Load() - before; got != 1 {
		t.Fatalf("a sync with new data wrote the status %d times, want 1", got)
	}
	if es := h.es(t); !es.Status.RefreshTime.Time.Equal(h.clock.t.Truncate(time.Second)) {
		t.Errorf("refreshTime %v after a sync with new data at %v, want the exact time", es.Status.RefreshTime, h.clock.t)
	}
}

func TestRestartDoesNotMakeAllDueAtOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const interval = time.Minute
	const n = 600
	perSecond := map[int64]int{}
	dueAtOnce := 0
	for i := 0; i < n; i++ {
		// Synced and refreshed all along by the instance before, which
		// last moved refreshTime up to an hour ago.
		written := metav1.NewTime(now.Add(-time.Duration(i%60) * time.Minute))
		es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint("uid-", i)), Generation: 1},
			Spec: v1alpha1.ExternalSecretSpec{RefreshInterval: &metav1.Duration{Duration: interval},
				Data: []v1alpha1.ExternalSecretData{{SecretKey: "k", RemoteRef: v1alpha1.RemoteReference{Key: fmt.Sprint("key-", i)}}}},
			Status: v1alpha1.ExternalSecretStatus{RefreshTime: &written, ObservedGeneration: 1, InputsVersion: "in"}}
		// The new instance's first look at it, as it starts.
		s := newSchedule(es, now, "store", "in", memory{started: now})
		if s.due() {
			// Only those whose phase point is now.
			dueAtOnce++
			continue
		}
		res := s.next(s.lastRead)
		// Within one interval, or as the status schedules it when it
		// shows a refresh after the start's floor (at most one and a half
		// intervals after it, as always).
		if res.RequeueAfter <= 0 || res.RequeueAfter > interval+interval/2 || (written.Time.Before(now.Add(-interval)) && res.RequeueAfter > interval) {
			t.Fatalf("ExternalSecret %d: next refresh in %v after a restart (refreshTime %v): a gap", i, res.RequeueAfter, written.Time)
		}
		perSecond[int64(res.RequeueAfter/time.Second)]++
		// At that time it is due.
		later := newSchedule(es, now.Add(res.RequeueAfter), "store", "in", memory{started: now})
		if !later.due() {
			t.Fatalf("ExternalSecret %d is not due at the time it was queued for", i)
		}
	}
	if dueAtOnce > n/60*2 {
		t.Errorf("%d of %d ExternalSecrets are due as the controller starts, want only those whose phase point is now", dueAtOnce, n)
	}
	busiest := 0
	for _, c := range perSecond {
		busiest = max(busiest, c)
	}
	if mean := n / 66; busiest > 3*mean {
		t.Errorf("the busiest second after a restart has %d of %d refreshes: not spread over the interval", busiest, n)
	}
}

func TestRestartedReconcilerNeitherReadsNorWrites(t *testing.T) {
	h := newHarness(t, "v1")
	withInterval(t, h, time.Minute, time.Hour)
	h.reconcile(t)
	runUntil(t, h, h.clock.t.Add(20*time.Minute))
	// A new instance, with nothing in memory, over the same objects.
	h.r = &Reconciler{Client: h.r.Client, Meta: h.r.Meta, Named: h.r.Named, Clients: h.r.Clients, Recorder: h.r.Recorder,
		Clock: h.r.Clock, Fetcher: h.r.Fetcher, StatusPeriod: time.Hour}
	h.clock.t = h.clock.t.Add(3 * time.Second)
	reads, writes := h.reads.Load(), h.n.statusWrites.Load()
	res := h.reconcile(t)
	if h.reads.Load() != reads || h.n.statusWrites.Load() != writes {
		t.Errorf("the first reconcile after a restart read the store %d times and wrote the status %d times, want neither",
			h.reads.Load()-reads, h.n.statusWrites.Load()-writes)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute+6*time.Second {
		t.Errorf("next refresh in %v after a restart, want within one interval", res.RequeueAfter)
	}
}

func TestStaleAfterThreeIntervalsAndFreshAgainOnSuccess(t *testing.T) {
	h := newHarness(t, "v1")
	withInterval(t, h, time.Minute, time.Hour)
	h.reconcile(t)
	synced := h.clock.t
	if c := conditions.FindES(h.es(t).Status.Conditions, v1alpha1.ConditionFresh); c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(failure.Refreshed) {
		t.Fatalf("Fresh after a sync: %+v", c)
	}
	setValue := func(key string) {
		var store v1alpha1.SecretStore
		if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "store"}, &store); err != nil {
			t.Fatal(err)
		}
		store.Spec.Fake.Data[0].Key = key
		store.Generation++
		if err := h.c.Update(context.Background(), &store); err != nil {
			t.Fatal(err)
		}
	}
	// The key goes missing: every retry fails.
	setValue("moved")
	failAt := func(d time.Duration) *v1alpha1.ExternalSecret {
		h.clock.t = synced.Add(d)
		if _, err := h.r.Reconcile(context.Background(), h.req); err == nil {
			t.Fatalf("at +%v: the sync did not fail", d)
		}
		return h.es(t)
	}
	es := failAt(90 * time.Second)
	if c := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionFresh); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Fresh after one failure, 1.5 intervals after the last refresh: %+v", c)
	}
	if r := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != string(failure.NotFound) {
		t.Fatalf("Ready %+v", r)
	}
	writes := h.n.statusWrites.Load()
	failAt(150 * time.Second)
	if got := h.n.statusWrites.Load() - writes; got != 0 {
		t.Errorf("the same failure again wrote the status %d times", got)
	}
	es = failAt(3*time.Minute + time.Second)
	fresh := conditions.FindES(es.Status.Conditions, v1alpha1.ConditionFresh)
	if fresh == nil || fresh.Status != metav1.ConditionFalse || fresh.Reason != string(failure.Stale) {
		t.Fatalf("Fresh after more than three intervals without a refresh: %+v", fresh)
	}
	if !strings.Contains(fresh.Message, string(failure.NotFound)) || !strings.Contains(fresh.Message, synced.Format(time.RFC3339)) {
		t.Errorf("the Stale message names neither the failure nor the last refresh: %q", fresh.Message)
	}
	for _, typ := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInSync} {
		if c := conditions.FindES(es.Status.Conditions, typ); c == nil || c.Reason != string(failure.NotFound) {
			t.Errorf("%s keeps the failure's own reason, got %+v", typ, c)
		}
	}
	writes = h.n.statusWrites.Load()
	failAt(5 * time.Minute)
	if got := h.n.statusWrites.Load() - writes; got != 0 {
		t.Errorf("a stale ExternalSecret failing the same way again wrote the status %d times", got)
	}
	// The key is back: the next sync succeeds, and Fresh is True again.
	setValue("db")
	h.clock.t = synced.Add(6 * time.Minute)
	h.reconcile(t)
	if c := conditions.FindES(h.es(t).Status.Conditions, v1alpha1.ConditionFresh); c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(failure.Refreshed) {
		t.Fatalf("Fresh after a successful sync: %+v", c)
	}
}

func TestFreshnessMetricsByStore(t *testing.T) {
	h := newHarness(t, "v1")
	withInterval(t, h, time.Minute, time.Hour)
	h.reconcile(t)
	synced := h.clock.t
	h.clock.t = synced.Add(30 * time.Second)
	got := h.r.Freshness()
	if len(got) != 1 || got[0].StoreKind != v1alpha1.SecretStoreKind || got[0].Store != "app/store" || got[0].Count != 1 ||
		got[0].Overdue != 0 || got[0].OldestAge != 30*time.Second {
		t.Fatalf("freshness after a sync: %+v", got)
	}
	// No reconcile for three minutes (the controller is behind): overdue.
	h.clock.t = synced.Add(3 * time.Minute)
	if got := h.r.Freshness(); got[0].Overdue != 1 || got[0].OldestAge != 3*time.Minute {
		t.Fatalf("freshness three intervals after the last refresh: %+v", got)
	}
	// A refresh that wrote nothing still counts.
	h.reconcile(t)
	if got := h.r.Freshness(); got[0].Overdue != 0 || got[0].OldestAge != 0 {
		t.Fatalf("freshness right after a refresh: %+v", got)
	}
	if !h.es(t).Status.RefreshTime.Time.Equal(synced) {
		t.Fatalf("the refresh wrote refreshTime")
	}
}

func TestCoarseWriteAndStaleness(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	s := schedule{now: now, interval: time.Minute, statusPeriod: time.Hour, statusPhase: 10 * time.Minute}
	cases := []struct {
		name    string
		written *time.Time
		ok      bool
		point   time.Time
	}{
		{name: "never written", written: nil},
		{name: "written 50 minutes ago", written: at(-50 * time.Minute)},
		// The last phase point is 11:10, within the period of 10:30.
		{name: "written 90 minutes ago", written: at(-90 * time.Minute)},
		{name: "written at the last phase point but one", written: at(-110 * time.Minute), ok: true, point: now.Add(-50 * time.Minute)},
		{name: "written long ago", written: at(-30 * time.Hour), ok: true, point: now.Add(-50 * time.Minute)},
	}
	for _, tc := range cases {
		s.written = tc.written
		point, ok := s.coarseWrite()
		if ok != tc.ok || (ok && !point.Equal(tc.point)) {
			t.Errorf("%s: coarseWrite = %v, %v; want %v, %v", tc.name, point, ok, tc.point, tc.ok)
		}
	}
	s.lastRead = at(-3 * time.Minute)
	if s.stale() {
		t.Error("stale at exactly three intervals")
	}
	s.lastRead = at(-3*time.Minute - time.Second)
	if !s.stale() {
		t.Error("not stale after three intervals")
	}
	s.interval = 0
	if s.stale() {
		t.Error("stale without a periodic refresh")
	}
}
