package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/operator"
)

// startWithStatusPeriod starts an operator of the class with the given
// status refresh period; it is stopped when the test ends.
func startWithStatusPeriod(t *testing.T, class string, period time.Duration) {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.StatusRefreshPeriod = period
	// The suite's operator already registered controllers of these names.
	opts.SkipNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, restCfg, opts)
	if err != nil {
		cancel()
		t.Fatalf("building the operator of class %s: %v", class, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = op.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// esWrites records, from a watch, every write of the ExternalSecrets of a
// namespace: the API server sends one event per write.
type esWrites struct {
	mu sync.Mutex
	// byName lists each ExternalSecret's versions in the order written.
	byName map[string][]*v1alpha1.ExternalSecret
}

func watchESWrites(t *testing.T, ns string) *esWrites {
	t.Helper()
	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: operator.Scheme()})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1alpha1.ExternalSecretList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	rec := &esWrites{byName: map[string][]*v1alpha1.ExternalSecret{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			es, ok := ev.Object.(*v1alpha1.ExternalSecret)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			rec.mu.Lock()
			rec.byName[es.Name] = append(rec.byName[es.Name], es.DeepCopy())
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return rec
}

func (r *esWrites) of(name string) []*v1alpha1.ExternalSecret {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*v1alpha1.ExternalSecret(nil), r.byName[name]...)
}

// afterSync splits an ExternalSecret's writes at its first sync: the
// version that first has Ready True, and the writes after it.
func afterSync(writes []*v1alpha1.ExternalSecret) (synced *v1alpha1.ExternalSecret, after []*v1alpha1.ExternalSecret) {
	for i, es := range writes {
		if c := readyCond(es); c != nil && c.Status == metav1.ConditionTrue {
			return es, writes[i+1:]
		}
	}
	return nil, nil
}

// TestNothingWrittenAtRest: ExternalSecrets refreshing every 2 seconds
// from a store whose data does not change write their status once at the
// sync, not at all within the status period (20 seconds) after it, and
// then once per period, each at a phase of its own, recording that phase
// point; meanwhile the store is read at every refresh.
func TestNothingWrittenAtRest(t *testing.T) {
	parallel(t)
	const class, period, interval, n = "atrest", 20 * time.Second, 2 * time.Second, 8
	ns := newNamespace(t, nil)
	startWithStatusPeriod(t, class, period)
	writes := watchESWrites(t, ns)
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}
	for i := 0; i < n; i++ {
		store.Spec.Fake.Data = append(store.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: fmt.Sprint("k", i), Value: "v"})
	}
	must(t, k8s.Create(context.Background(), store))
	for i := 0; i < n; i++ {
		newES(t, ns, fmt.Sprint("es", i), "store", withData("value", fmt.Sprint("k", i), ""), withRefresh(interval))
	}
	for i := 0; i < n; i++ {
		waitReady(t, ns, fmt.Sprint("es", i))
	}
	readsAtSync := readCount(ns + "/store")

	// Wait until every ExternalSecret has made two coarse writes (the
	// first within two periods of its sync, the next one period later).
	eventually(t, 4*period+wait, func() (bool, string) {
		for i := 0; i < n; i++ {
			name := fmt.Sprint("es", i)
			if _, after := afterSync(writes.of(name)); len(after) < 2 {
				return false, fmt.Sprintf("%s: %d writes after its sync", name, len(after))
			}
		}
		return true, ""
	})

	phases := map[time.Duration]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprint("es", i)
		synced, after := afterSync(writes.of(name))
		if synced.Status.RefreshTime == nil {
			t.Fatalf("%s: synced without refreshTime", name)
		}
		prev := synced.Status.RefreshTime.Time
		for j, es := range after {
			rt := es.Status.RefreshTime
			if rt == nil || !rt.After(prev) {
				t.Errorf("%s: write %d after the sync did not move refreshTime (%v after %v): a write that brought nothing", name, j, rt, prev)
				continue
			}
			if rt.Sub(prev) < period {
				t.Errorf("%s: write %d after the sync records %v, %v after the write before it: within one status period", name, j, rt.Time, rt.Sub(prev))
			}
			if j > 0 && rt.Sub(prev) != period {
				t.Errorf("%s: coarse writes %d and %d record %v apart, want one period (%v)", name, j-1, j, rt.Sub(prev), period)
			}
			if c := readyCond(es); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("%s: write %d: %s", name, j, describeES(es))
			}
			prev = rt.Time
		}
		phases[time.Duration(prev.UnixNano()%int64(period))] = true
	}
	if len(phases) < 2 {
		t.Errorf("the coarse writes of %d ExternalSecrets all record the same phase of the period: not spread", n)
	}
	// The refreshes went on all the while: with a key each, every
	// ExternalSecret read the store about every 2 seconds.
	if got := readCount(ns+"/store") - readsAtSync; got < n*int(period/interval) {
		t.Errorf("the store was read %d times over more than two status periods by %d ExternalSecrets refreshing every %v", got, n, interval)
	}
}
