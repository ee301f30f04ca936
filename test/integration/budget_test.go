package integration

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/operator"
)

// budgetOptions are an operator's options with a client budget of 5
// requests a second, burst 5, small enough to time.
func budgetOptions(class string) operator.Options {
	opts := operator.DefaultOptions()
	opts.Registry = registry()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.ControllerClass = class
	opts.QPS, opts.Burst = 5, 5
	// The suite's operator already registered controllers of these names.
	opts.SkipNameValidation = true
	return opts
}

// rateLimiterWaitSum is the sum of the client rate limiter's waits
// measured for requests of verb to the test's API server.
func rateLimiterWaitSum(t *testing.T, verb string) float64 {
	t.Helper()
	u, err := url.Parse(restCfg.Host)
	must(t, err)
	var m dto.Metric
	must(t, metrics.ClientRateLimiterWait.WithLabelValues(verb, u.Host).(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleSum()
}

// TestClientBudgetIsOneForAllKinds: with --kube-api-qps 5 and
// --kube-api-burst 5, requests of three kinds through the manager's
// clients (Secret reads through its client, ConfigMap reads through its
// API reader, ExternalSecret status writes through its status writer)
// and an event through its recorder draw from one bucket: 24 requests
// take at least (24-5)/5 = 3.8 s, where a bucket per kind would let each
// kind's 8 through in 0.6 s, and the event waits its turn behind them.
// The waits are measured in rest_client_rate_limiter_duration_seconds.
// The manager is not started, so only the test's requests (and the
// discovery they need) spend the budget.
//
// Serial: measures waits in the process-wide rest_client_rate_limiter_duration_seconds, which other operators' requests also move.
func TestClientBudgetIsOneForAllKinds(t *testing.T) {
	ns := newNamespace(t, nil)
	ctx := context.Background()
	sec := createSecret(t, ns, "s", map[string]string{"k": "v"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
	must(t, k8s.Create(ctx, cm))
	// Its store does not exist: no operator writes to its target.
	es := newES(t, ns, "es", "no-such-store", withData("v", "k", ""))

	op, err := operator.New(ctx, restCfg, budgetOptions("budget-kinds"))
	must(t, err)
	mgr := op.Manager
	//nolint:staticcheck // SA1019: the reconcilers record through this recorder (operator.New).
	recorder := mgr.GetEventRecorderFor("budget-test")

	requests := []func() error{
		func() error { return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}) },
		func() error { return mgr.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) },
		func() error {
			patch := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: es.Name}}
			return mgr.GetClient().Status().Patch(ctx, patch, client.RawPatch(types.MergePatchType, []byte(`{}`)))
		},
	}
	const perKind = 8
	n := perKind * len(requests)
	waitsBefore := rateLimiterWaitSum(t, "GET") + rateLimiterWaitSum(t, "PATCH")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- requests[i%len(requests)]() })
	}
	// Recorded once the requests above hold the budget.
	time.Sleep(300 * time.Millisecond)
	recorded := time.Now()
	recorder.Event(cm, corev1.EventTypeNormal, "BudgetShared", "an event of the budget test")
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if took < 3*time.Second {
		t.Fatalf("%d requests of %d kinds took %s with a budget of 5 a second, burst 5: less than one bucket allows (3.8 s); each kind has a bucket of its own", n, len(requests), took.Round(time.Millisecond))
	}
	t.Logf("%d requests of %d kinds took %s", n, len(requests), took.Round(time.Millisecond))

	var sent time.Duration
	eventually(t, wait, func() (bool, string) {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "BudgetShared" {
				sent = time.Since(recorded)
				return true, ""
			}
		}
		return false, "no BudgetShared event"
	})
	// Behind about 20 requests at 5 a second; a bucket of its own would
	// have let it through at once.
	if sent < 2*time.Second {
		t.Fatalf("the event was written %s after it was recorded, while the other requests held the budget: it has a bucket of its own", sent.Round(time.Millisecond))
	}
	t.Logf("the event was written within %s of being recorded", sent.Round(time.Millisecond))

	// One bucket: the waits are 0.2 s, 0.4 s, … 3.8 s, 38 s in all; a
	// bucket per kind would make them 3.6 s in all.
	if waited := rateLimiterWaitSum(t, "GET") + rateLimiterWaitSum(t, "PATCH") - waitsBefore; waited < 15 {
		t.Fatalf("rest_client_rate_limiter_duration_seconds measured %.1fs of waits for the %d requests, less than one bucket makes them wait (38 s)", waited, n)
	}
}

// TestLeaderElectionOutsideTheClientBudget: a leader whose client budget
// is spent, with requests queued for 18 s, still renews its lease and
// keeps leading. Were its lease requests in the budget,
// a renewal would wait longer than the renew deadline and the leader
// would lose the lease and stop.
//
// Serial: asserts the lease is renewed within its 6 s duration, a bound the other tests' load on the API server could break.
func TestLeaderElectionOutsideTheClientBudget(t *testing.T) {
	ns := newNamespace(t, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
	must(t, k8s.Create(context.Background(), cm))
	opts := budgetOptions("budget-leader")
	opts.LeaderElection, opts.LeaderElectionNamespace = true, ns
	const lease = 6 * time.Second
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = lease, 4*time.Second, 500*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, restCfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stopped := make(chan struct{}) // closed when Start returned startErr
	var startErr error
	go func() {
		defer close(stopped)
		startErr = op.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		awaitStop(t, "the operator", stopped)
	})
	// Its caches fill at 5 lists a second before it runs for the lease.
	select {
	case <-op.Manager.Elected():
	case <-stopped:
		t.Fatalf("the operator stopped before it was elected: %v", startErr)
	case <-time.After(3 * wait):
		t.Fatalf("not elected within %s", 3*wait)
	}

	// 90 reads at 5 a second, burst 5: the budget is spent for 17 s.
	const flood = 90
	floodCtx, endFlood := context.WithCancel(ctx)
	defer endFlood()
	var done atomic.Int64
	for range flood {
		go func() {
			if op.Manager.GetAPIReader().Get(floodCtx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) == nil {
				done.Add(1)
			}
		}()
	}
	const hold = 10 // seconds, longer than the lease's duration
	consistently(t, hold*time.Second, func() (bool, string) {
		select {
		case <-stopped:
			return false, fmt.Sprintf("the leader stopped while its client budget was spent: %v", startErr)
		default:
		}
		var l coordinationv1.Lease
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: operator.LeaderElectionID(opts.ControllerClass)}, &l); err != nil {
			return false, err.Error()
		}
		if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > lease {
			return false, fmt.Sprintf("the lease was not renewed for its duration, %s (retry period 0.5 s), while the client budget was spent", lease)
		}
		return true, ""
	})
	// The budget was spent the whole time: reads were still waiting.
	if d := done.Load(); d >= flood {
		t.Fatalf("all %d reads were done within %d s: the budget was not spent, the test proves nothing", d, hold)
	}
	t.Logf("%d of %d reads done in %d s while the lease was renewed", done.Load(), flood, hold)
}
