package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/metrics"
)

// These tests run the store call limits (the gate every call to a store
// passes, docs/reliability.md) through the real API server and the suite's
// operator. Each states its outcome and prints what it measured; the
// assertions bound counts of calls, never durations.

// limitedStore makes a fake SecretStore with n keys k0..k(n-1), whose
// values are v-k0.., with limits and an optional error.
func limitedStore(t *testing.T, ns, name string, n int, limits *v1alpha1.StoreLimits, change func(*v1alpha1.FakeProvider)) {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{Limits: limits, SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	for i := range n {
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: fmt.Sprintf("k%d", i), Value: fmt.Sprintf("v-k%d", i)})
	}
	if change != nil {
		change(s.Spec.Fake)
	}
	must(t, k8s.Create(context.Background(), s))
}

// readersOf makes n ExternalSecrets es0.. of store, each reading its own
// key, refreshed every interval.
func readersOf(t *testing.T, ns, store string, n int, interval time.Duration) {
	t.Helper()
	for i := range n {
		newES(t, ns, fmt.Sprintf("es%d", i), store, withRefresh(interval), withData("v", fmt.Sprintf("k%d", i), ""))
	}
}

func readyCount(t *testing.T, ns string) int {
	t.Helper()
	var list v1alpha1.ExternalSecretList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
	n := 0
	for i := range list.Items {
		if c := readyCond(&list.Items[i]); c != nil && c.Status == metav1.ConditionTrue {
			n++
		}
	}
	return n
}

func TestStoreCallBudgetBoundsEveryRefresh(t *testing.T) {
	parallel(t)
	// Outcome: a store with a budget of 60 calls a minute (burst 10),
	// read by 20 ExternalSecrets refreshed every 5 s (240 calls a minute
	// wanted), gets no more than 10 + 60 a minute of calls, and every
	// ExternalSecret is still synced; a refresh held back by the budget
	// records no failure.
	ns := newNamespace(t, nil)
	limitedStore(t, ns, "store", 20, &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](60), Burst: ptr.To[int32](10)}, nil)
	store := ns + "/store"
	start := time.Now()
	readersOf(t, ns, "store", 20, 5*time.Second)
	eventually(t, 3*time.Minute, func() (bool, string) {
		n := readyCount(t, ns)
		return n == 20, fmt.Sprintf("%d of 20 Ready", n)
	})
	synced := time.Since(start)
	steadyFrom, steadyCalls := time.Now(), readCount(store)
	time.Sleep(15 * time.Second)
	elapsed, calls := time.Since(start), readCount(store)
	steady := float64(calls-steadyCalls) / time.Since(steadyFrom).Minutes()
	bound := 10 + int(60*elapsed.Minutes()) + 1
	delayed := testutil.ToFloat64(metrics.StoreCallsDelayed.WithLabelValues(v1alpha1.SecretStoreKind, store))
	refused := testutil.ToFloat64(metrics.StoreCallsRefused.WithLabelValues(v1alpha1.SecretStoreKind, store, "budget"))
	t.Logf("budget 60/min, burst 10, 240/min wanted: all 20 synced after %s; %d calls in %s (bound %d); %.1f calls/min at steady state; %.0f delayed, %.0f refused by the gate",
		synced.Round(100*time.Millisecond), calls, elapsed.Round(100*time.Millisecond), bound, steady, delayed, refused)
	if calls > bound {
		t.Fatalf("%d calls reached the store in %s; its budget allows %d", calls, elapsed, bound)
	}
	if delayed+refused == 0 {
		t.Fatal("the gate neither delayed nor refused a call: the budget was not in the way")
	}
	if n := readyCount(t, ns); n != 20 {
		t.Fatalf("%d of 20 are Ready while the budget holds refreshes back; a held-back refresh is no failure", n)
	}
	assertNoLeak(t, ns)
}

func TestRevokedCredentialsHoldTheStoreForMinutes(t *testing.T) {
	parallel(t)
	// Outcome: a store that refuses the credentials gets no call for the
	// hold (a minute at first) however often its 5 ExternalSecrets want
	// to refresh; the condition says PermissionDenied and until when;
	// the fix is picked up at once, long before the hold ends.
	ns := newNamespace(t, nil)
	limitedStore(t, ns, "store", 5, nil, func(f *v1alpha1.FakeProvider) {
		f.Error = &v1alpha1.FakeProviderError{Reason: "Unauthenticated", Message: "the token was revoked"}
	})
	store := ns + "/store"
	readersOf(t, ns, "store", 5, time.Second)
	waitCondition(t, ns, "es0", "PermissionDenied", "the token was revoked", "no call is sent to the store until")
	held := readCount(store)
	time.Sleep(10 * time.Second)
	after := readCount(store)
	refused := testutil.ToFloat64(metrics.StoreCallsRefused.WithLabelValues(v1alpha1.SecretStoreKind, store, "unauthenticated"))
	t.Logf("revoked credentials, 5 ExternalSecrets refreshed every second: %d calls until the refusal, %d more in the next 10 s; %.0f refused by the gate", held, after-held, refused)
	if after != held {
		t.Fatalf("%d calls reached a store held after it refused the credentials", after-held)
	}
	if held > 5 {
		t.Fatalf("%d calls reached the store before the hold; at most one per ExternalSecret was in flight", held)
	}

	fixed := time.Now()
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Error = nil })
	eventually(t, 30*time.Second, func() (bool, string) {
		n := readyCount(t, ns)
		return n == 5, fmt.Sprintf("%d of 5 Ready", n)
	})
	t.Logf("after the fix, all 5 were Ready in %s (the hold had about 50 s left)", time.Since(fixed).Round(10*time.Millisecond))
	waitSecretData(t, ns, "es0", map[string]string{"v": "v-k0"})
	assertNoLeak(t, ns)
}

func TestThrottledStoreHonoursRetryAfter(t *testing.T) {
	parallel(t)
	// Outcome: a store that answers "slow down, retry after 5 s" gets at
	// most one call per 5 s while it throttles, whatever its 5
	// ExternalSecrets refreshed every second want; no hot loop.
	ns := newNamespace(t, nil)
	limitedStore(t, ns, "store", 5, nil, func(f *v1alpha1.FakeProvider) {
		f.Error = &v1alpha1.FakeProviderError{Reason: "Throttled", Message: "rate limit exceeded", RetryAfter: &metav1.Duration{Duration: 5 * time.Second}}
	})
	store := ns + "/store"
	readersOf(t, ns, "store", 5, time.Second)
	waitCondition(t, ns, "es0", "Throttled", "rate limit exceeded")
	from, before := time.Now(), readCount(store)
	time.Sleep(15 * time.Second)
	window, calls := time.Since(from), readCount(store)-before
	bound := int(window/(5*time.Second)) + 1
	t.Logf("throttled with Retry-After 5s: %d calls in %s (bound %d), %.1f calls/min during the episode", calls, window.Round(100*time.Millisecond), bound, float64(calls)/window.Minutes())
	if calls > bound {
		t.Fatalf("%d calls reached a throttling store in %s; Retry-After 5s allows %d", calls, window, bound)
	}
	updateStore(t, ns, "store", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Error = nil })
	eventually(t, 30*time.Second, func() (bool, string) {
		n := readyCount(t, ns)
		return n == 5, fmt.Sprintf("%d of 5 Ready", n)
	})
	assertNoLeak(t, ns)
}

// Serial: measures that the suite operator's shared workers serve another
// store while a slow store's backlog waits, which other tests' work would
// crowd.
func TestSlowStoreDoesNotDelayOtherStores(t *testing.T) {
	// Outcome: while a store that takes 5 s per call has 40
	// ExternalSecrets waiting for it (it allows 8 calls at once: half of
	// the suite's 16 workers), a new ExternalSecret of another store is
	// synced before the slow store's backlog is; the slow store's are
	// all synced in the end, with no failure recorded for waiting.
	slowNS := newNamespace(t, nil)
	limitedStore(t, slowNS, "slow", 40, nil, func(f *v1alpha1.FakeProvider) { f.Latency = &metav1.Duration{Duration: 5 * time.Second} })
	readersOf(t, slowNS, "slow", 40, time.Hour)
	// Let the backlog form: every worker has had a slow ExternalSecret.
	time.Sleep(2 * time.Second)

	ns := newNamespace(t, nil)
	fakeStore(t, ns, "quick", fakeEntry{key: "db", value: "quick-value"})
	start := time.Now()
	newES(t, ns, "es", "quick", withData("v", "db", ""))
	waitReady(t, ns, "es")
	took := time.Since(start)
	slowDone := readyCount(t, slowNS)
	t.Logf("another store's new ExternalSecret was Ready in %s, while %d of 40 of the slow store's were synced", took.Round(time.Millisecond), slowDone)
	if slowDone == 40 {
		t.Fatal("the slow store's backlog was gone before the other store's ExternalSecret was synced: the test did not test anything")
	}
	eventually(t, 3*time.Minute, func() (bool, string) {
		n := readyCount(t, slowNS)
		return n == 40, fmt.Sprintf("%d of 40 of the slow store's Ready", n)
	})
	events, err := kube.CoreV1().Events(slowNS).List(context.Background(), metav1.ListOptions{})
	must(t, err)
	for _, e := range events.Items {
		if e.Type == "Warning" {
			t.Fatalf("%s recorded a failure while it waited for a call slot: %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

func TestStarvedRefreshesTurnStaleAndRecover(t *testing.T) {
	parallel(t)
	// Outcome: a budget far below what the refreshes want (10
	// ExternalSecrets refreshed every second, 600 calls a minute wanted,
	// 30 allowed) holds refreshes back without a failure: every target
	// keeps its data and Ready stays True; but an ExternalSecret whose
	// refreshes are held back for more than three intervals shows it, as
	// Fresh False with reason Stale naming the store's call limits. Once
	// the budget is lifted, every one is Fresh again, and stays so.
	ns := newNamespace(t, nil)
	limitedStore(t, ns, "store", 10, &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](30), Burst: ptr.To[int32](10)}, nil)
	readersOf(t, ns, "store", 10, time.Second)
	for i := range 10 {
		waitSecretData(t, ns, fmt.Sprintf("es%d", i), map[string]string{"v": fmt.Sprintf("v-k%d", i)})
	}
	start := time.Now()
	var stale *v1alpha1.ExternalSecretCondition
	eventually(t, 2*time.Minute, func() (bool, string) {
		var list v1alpha1.ExternalSecretList
		must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
		for i := range list.Items {
			if c := conditions.FindES(list.Items[i].Status.Conditions, v1alpha1.ConditionFresh); c != nil && c.Status == metav1.ConditionFalse {
				stale = c.DeepCopy()
				return true, ""
			}
		}
		return false, "no ExternalSecret shows its refreshes held back"
	})
	t.Logf("first Stale after %s: %s", time.Since(start).Round(100*time.Millisecond), stale.Message)
	if stale.Reason != string(failure.Stale) || !strings.Contains(stale.Message, "call limits") {
		t.Errorf("a starved ExternalSecret shows %s: %q; want Stale naming the store's call limits", stale.Reason, stale.Message)
	}
	if n := readyCount(t, ns); n != 10 {
		t.Errorf("%d of 10 Ready while refreshes are held back; held back is no failure", n)
	}
	for i := range 10 {
		waitSecretData(t, ns, fmt.Sprintf("es%d", i), map[string]string{"v": fmt.Sprintf("v-k%d", i)})
	}

	var s v1alpha1.SecretStore
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "store"}, &s))
	s.Spec.Limits = nil
	must(t, k8s.Update(context.Background(), &s))
	lifted := time.Now()
	allFresh := func() (bool, string) {
		var list v1alpha1.ExternalSecretList
		must(t, k8s.List(context.Background(), &list, client.InNamespace(ns)))
		for i := range list.Items {
			if c := conditions.FindES(list.Items[i].Status.Conditions, v1alpha1.ConditionFresh); c == nil || c.Status != metav1.ConditionTrue {
				return false, fmt.Sprintf("%s not Fresh: %+v", list.Items[i].Name, c)
			}
		}
		return true, ""
	}
	eventually(t, time.Minute, allFresh)
	t.Logf("all 10 Fresh again %s after the budget was lifted", time.Since(lifted).Round(100*time.Millisecond))
	// Under the budget one of them turned Stale within seconds, again
	// and again; without it, none does.
	consistently(t, 10*time.Second, allFresh)
	assertNoLeak(t, ns)
}

// TestStarvedRefreshesAreServedInTurn: 200 ExternalSecrets refreshed every
// 10 s (1,200 calls a minute wanted) from a store whose budget gives a
// quarter of that (300 a minute, 5 a second: the operator's 16 workers
// want more than MaxBudgetWait of it, so callers are turned away and
// take turns). Over 100 s every key is read again within a round of the
// line (200 calls at 5 a second: 40 s, four intervals) and the jitter of
// the callers' returns (up to half of it; the test allows a whole round
// more, for a loaded machine), none starved; and the budget is spent on
// reads, not lost to callers that missed their turn. Without turns, 2 of
// the 200 had not been read even once two minutes after they were made.
//
// Serial: measures how long keys wait and how much of a budget the suite
// operator spends over 100 s, which other tests' load would change.
func TestStarvedRefreshesAreServedInTurn(t *testing.T) {
	ns := newNamespace(t, nil)
	const n, interval, perMinute = 200, 10 * time.Second, 300
	store := ns + "/store"
	timeReads(store)
	limitedStore(t, ns, "store", n, &v1alpha1.StoreLimits{CallsPerMinute: ptr.To[int32](perMinute), Burst: ptr.To[int32](5)}, nil)
	readersOf(t, ns, "store", n, interval)
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &v1alpha1.ExternalSecret{}, client.InNamespace(ns))
	})
	eventually(t, 2*time.Minute, func() (bool, string) {
		got := len(readTimes(store))
		return got == n, fmt.Sprintf("%d of %d keys read once", got, n)
	})
	start := time.Now()
	const watch = 100 * time.Second
	time.Sleep(watch)
	end := time.Now()

	var longest time.Duration
	var worst string
	var inWindow int
	for key, times := range readTimes(store) {
		last := times[0]
		for _, at := range times[1:] {
			if at.After(start) {
				if at.After(end) {
					break
				}
				inWindow++
				if gap := at.Sub(last); gap > longest {
					longest, worst = gap, key
				}
			}
			last = at
		}
		if gap := end.Sub(last); gap > longest {
			longest, worst = gap, key
		}
	}
	round := time.Duration(n) * time.Minute / perMinute
	budget := int(watch.Minutes() * perMinute)
	t.Logf("over %s: %d reads (the budget allows %d); the longest a key went unread: %s (%s; one round of the line is %s, %.1f intervals)",
		watch, inWindow, budget, longest.Round(100*time.Millisecond), worst, round, float64(longest)/float64(interval))
	if longest > 2*round {
		t.Errorf("key %s went %s without a read, more than two rounds of the line (%s): refreshes are starved", worst, longest.Round(100*time.Millisecond), 2*round)
	}
	if inWindow < budget*7/10 {
		t.Errorf("%d reads in %s where the budget allows %d: the budget is lost to missed turns", inWindow, watch, budget)
	}
}
