package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
	"github.com/watchword-dev/watchword/internal/secretwatch"
	"github.com/watchword-dev/watchword/test/awsfake"
)

const storeName = "bench-store"

type bench struct {
	// pluginEndpoint is the memory plugin's socket, with -store memory-plugin.
	pluginEndpoint string
	// aws is the fake AWS, with -store aws.
	aws  *awsfake.Server
	c    config
	k8s  client.Client
	kube kubernetes.Interface
	kc   string
	cfg  *rest.Config
	esNS []string
	// apiMs is the API server's CPU milliseconds per write of each of the
	// three kinds a sync makes, each measured alone.
	apiMs map[string]float64
}

// Names of the three writes of a sync, in apiMs.
const (
	writeSecretCreate = "Secret create"
	writeESCreate     = "ExternalSecret create"
	writeStatus       = "status update"
)

// apiserverMs measures the API server's CPU milliseconds per write of
// n writes made by f, as the write named what.
func (b *bench) apiserverMs(what string, n int, f func() error) error {
	// The profile of a write alone is short: each phase lasts a few
	// seconds on this kind of machine.
	profiled := b.profile(context.Background(), what, min(profileSync, aloneProfile), false)
	before := b.cpu(nil)["kube-apiserver"]
	err := f()
	profiled()
	if b.apiMs == nil {
		b.apiMs = map[string]float64{}
	}
	b.apiMs[what] = (b.cpu(nil)["kube-apiserver"] - before) * 1000 / float64(max(n, 1))
	return err
}

func run(ctx context.Context, c config) (*result, error) {
	res := &result{Config: c, Machine: fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	fmt.Fprintln(os.Stderr, "starting etcd and kube-apiserver…")
	cluster, err := localcluster.Start(localcluster.Options{NoControllerManager: true})
	if err != nil {
		return res, err
	}
	defer func() { _ = cluster.Stop() }()
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = 100000, 100000
	b := &bench{c: c, cfg: cfg}
	if b.k8s, err = client.New(cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		return res, err
	}
	b.kube = kubernetes.NewForConfigOrDie(cfg)
	kc, err := cluster.Kubeconfig()
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "watchword-bench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	b.kc = filepath.Join(dir, "kubeconfig")
	if err = os.WriteFile(b.kc, kc, 0o600); err != nil {
		return res, err
	}

	// 1. The raw limit, measured while creating the unrelated Secrets.
	fmt.Fprintf(os.Stderr, "creating %d unrelated Secrets (the raw limit)…\n", c.Unrelated)
	if res.RawCreatesPerSec, err = b.createUnrelated(ctx); err != nil {
		return res, err
	}

	// The custom-resource writes of a sync, alone.
	fmt.Fprintln(os.Stderr, "measuring ExternalSecret creates and status updates alone…")
	if res.ESCreatesPerSec, res.StatusUpdatesPerSec, err = b.customLimits(ctx); err != nil {
		return res, err
	}
	res.Bound = 1 / (1/res.ESCreatesPerSec + 1/res.RawCreatesPerSec + 1/res.StatusUpdatesPerSec)

	// 2. The controller, as its own process.
	ctrl, err := startController(c.Binary, b.kc)
	if err != nil {
		return res, err
	}
	defer func() { ctrl.stop() }()
	if c.Store == storeMemoryPlugin {
		fmt.Fprintln(os.Stderr, "starting the memory plugin…")
		var stopPlugin func()
		if b.pluginEndpoint, stopPlugin, err = b.startMemoryPlugin(ctx, dir); err != nil {
			return res, err
		}
		defer stopPlugin()
	}
	if c.Store == storeAWS {
		if err = b.startAWSFake(ctx); err != nil {
			return res, err
		}
		defer b.aws.Close()
	}
	if err = b.createStore(ctx); err != nil {
		return res, err
	}
	if !bareOperator {
		if err = b.waitStoreReady(ctx); err != nil {
			return res, err
		}
	}

	// 3. N ExternalSecrets, timed until every target has the right data.
	apiBefore, err := b.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	mBefore, _ := ctrl.scrape()
	res.IdleRSSMiB = ctrl.rss()
	cpuBefore := b.cpu(ctrl)
	fmt.Fprintf(os.Stderr, "creating %d ExternalSecrets…\n", c.N)
	profiled := b.profile(ctx, "sync", profileSync, true)
	synced, err := b.createAndWait(ctx, ctrl)
	if err != nil {
		return res, err
	}
	syncEnd := time.Now()
	res.CPUSecondsSync = b.cpu(ctrl).since(cpuBefore)
	profiled()
	res.APIServerMsAlone = b.apiMs
	res.APIServerMsSync = res.CPUSecondsSync["kube-apiserver"] * 1000 / float64(c.N)
	res.SyncSeconds = synced.Seconds()
	res.SyncedPerSec = float64(c.N) / res.SyncSeconds
	res.FractionOfLimit = res.SyncedPerSec / (res.RawCreatesPerSec / 3)
	res.FractionOfBound = res.SyncedPerSec / res.Bound
	res.WrongData, err = b.verify(ctx)
	if err != nil {
		return res, err
	}
	res.AllSynced = res.WrongData == 0
	mAfter, _ := ctrl.scrape()
	res.ProviderCallsSync = mAfter.since(mBefore, "watchword_provider_calls_total", `operation="get"`)
	const wait = "rest_client_rate_limiter_duration_seconds"
	res.ClientWaitSecondsSync = mAfter.since(mBefore, wait+"_sum")
	res.ClientWaitedSync = mAfter.since(mBefore, wait+"_count") - mAfter.since(mBefore, wait+"_bucket", `le="0.001"`)
	res.ClientWaitLongestSync = longestBound(mAfter, mBefore, wait)
	res.BatchCallsSync = mAfter.since(mBefore, "watchword_provider_calls_total", `operation="batchGet"`)
	b.awsCalls("during the sync")
	apiAfter, err := b.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	res.APIRequestsByVerb = map[string]float64{}
	for _, verb := range []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"} {
		res.APIRequestsByVerb[verb] = apiAfter.since(apiBefore, "apiserver_request_total", `verb="`+verb+`"`)
	}
	res.WatchEventsByResource = apiAfter.sinceBy(apiBefore, "apiserver_watch_events_total", "resource")
	res.WatchEventKiBByResource = apiAfter.sinceBy(apiBefore, "apiserver_watch_events_sizes_sum", "resource")
	for resource := range res.WatchEventKiBByResource {
		res.WatchEventKiBByResource[resource] /= 1024
	}
	res.WatchersTerminatedByResource = apiAfter.sinceBy(apiBefore, "apiserver_terminated_watchers_total", "resource")
	res.EventsSync = apiAfter.since(apiBefore, "apiserver_request_total", `resource="events"`, `verb="POST"`)
	if bareOperator {
		// The bare operator only syncs: nothing after the sync is its.
		res.PeakRSSMiB = ctrl.peakRSS()
		return res, nil
	}

	// 4. Steady state: provider calls per cycle and how refreshes spread.
	if c.Cycles > 0 {
		fmt.Fprintf(os.Stderr, "observing %d refresh cycles of %s…\n", c.Cycles, c.Refresh)
		if err = b.steady(ctx, ctrl, res); err != nil {
			return res, err
		}
	}
	// The steady state's writes: nothing changes, so a refresh brings
	// nothing new and writes nothing; counted by the API server itself.
	if c.Steady > 0 {
		fmt.Fprintf(os.Stderr, "counting the API server's writes over %s with nothing changing…\n", c.Steady)
		if err = b.steadyWrites(ctx, res, syncEnd); err != nil {
			return res, err
		}
	}
	res.PeakRSSMiB = ctrl.peakRSS()

	// 5. A restart must not cause a refresh storm; a new ExternalSecret
	// created as the controller starts waits only for its caches. It
	// comes after the steady window, so that nothing but the restart
	// explains the writes and calls of its window.
	fmt.Fprintln(os.Stderr, "restarting the controller…")
	ctrl.stop()
	apiBefore, err = b.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	cpuRestart := b.cpu(nil)
	processStart := time.Now()
	ctrl, err = startController(c.Binary, b.kc)
	if err != nil {
		return res, err
	}
	restartStart := time.Now()
	if res.NewESSecondsDuring, err = b.newDuringRestart(ctx); err != nil {
		return res, err
	}
	newSynced := restartStart.Add(time.Duration(res.NewESSecondsDuring * float64(time.Second)))
	res.NewESSecondsDuring = newSynced.Sub(processStart).Seconds()
	if taken, leaseErr := b.leaseTaken(ctx, processStart); leaseErr != nil {
		fmt.Fprintln(os.Stderr, "the restarted controller's lease:", leaseErr)
	} else {
		res.LeaseSeconds = taken.Sub(processStart).Seconds()
		res.NewESAfterLease = newSynced.Sub(taken).Seconds()
	}
	time.Sleep(time.Until(restartStart.Add(c.RestartWindow)))
	res.RestartAPICPU = b.cpu(nil).since(cpuRestart)["kube-apiserver"]
	end, err := ctrl.scrape()
	if err != nil {
		return res, err
	}
	// The new process counts from zero; one read is the new ExternalSecret's.
	res.RestartCalls = end.sum("watchword_provider_calls_total", `operation="get"`)
	apiAfter, err = b.apiserverMetrics(ctx)
	if err != nil {
		return res, err
	}
	for _, verb := range []string{"POST", "PUT", "PATCH"} {
		res.RestartWrites += apiAfter.since(apiBefore, "apiserver_request_total", `resource="secrets"`, `verb="`+verb+`"`)
	}
	res.RestartWrites-- // the new ExternalSecret's own target
	res.RestartLists = apiAfter.sinceBy(apiBefore, "apiserver_request_total", "resource", `verb="LIST"`)
	res.RestartStatusWrites = apiAfter.since(apiBefore, "apiserver_request_total", `resource="externalsecrets"`, `subresource="status"`) - 1 // the new one's
	res.RestartPeakRSSMiB = ctrl.peakRSS()

	// 6. A takeover by a standby replica, started before the leader goes:
	// how soon after it takes the lease it syncs new work.
	if c.StandbyWarmup > 0 {
		fmt.Fprintf(os.Stderr, "starting a standby controller, waiting %s, stopping the leader…\n", c.StandbyWarmup)
		pprofAddr = "" // the leader serves its profiles on that address
		standby, startErr := startController(c.Binary, b.kc)
		if startErr != nil {
			return nil, startErr
		}
		defer func() { ctrl.stop() }()
		time.Sleep(c.StandbyWarmup)
		stopped := time.Now()
		ctrl.stop()
		var took float64
		if took, err = b.timeNewES(ctx, "es-new-after-takeover"); err != nil {
			return res, err
		}
		synced := time.Now()
		var taken time.Time
		if taken, err = b.leaseTaken(ctx, stopped); err != nil {
			return res, err
		}
		res.TakeoverLeaseSeconds = taken.Sub(stopped).Seconds()
		res.TakeoverNewESAfterLease = synced.Sub(taken).Seconds()
		res.TakeoverNewESSeconds = took
		res.StandbyPeakRSSMiB = standby.peakRSS()
		ctrl = standby
	}

	// 7. New work ahead of fan-out work: a store edit makes every
	// ExternalSecret due at once; a new one created right after must not
	// wait behind them.
	fmt.Fprintf(os.Stderr, "editing the store (every ExternalSecret becomes due) and creating a new one…\n")
	if res.NewESSecondsFanOut, err = b.newDuringFanOut(ctx, ctrl); err != nil {
		return res, err
	}
	return res, nil
}

// parallel runs fn for 0..n-1 on c.Parallel workers.
func (b *bench) parallel(ctx context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for w := 0; w < b.c.Parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func (b *bench) ensureNamespace(ctx context.Context, name string) error {
	err := b.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return client.IgnoreAlreadyExists(err)
}

func (b *bench) createUnrelated(ctx context.Context) (float64, error) {
	const spaces = 20
	for i := 0; i < spaces; i++ {
		if err := b.ensureNamespace(ctx, fmt.Sprintf("unrelated-%d", i)); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	err := b.apiserverMs(writeSecretCreate, b.c.Unrelated, func() error {
		return b.parallel(ctx, b.c.Unrelated, func(i int) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("unrelated-%d", i%spaces), Name: fmt.Sprintf("s-%d", i)},
				Data: map[string][]byte{"k": bytes.Repeat([]byte{'x'}, 32)}}
			return b.k8s.Create(ctx, s)
		})
	})
	if err != nil {
		return 0, err
	}
	return float64(b.c.Unrelated) / time.Since(start).Seconds(), nil
}

func (b *bench) createStore(ctx context.Context) error {
	if b.c.Store == storeMemoryPlugin {
		s := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: storeName},
			Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{
				Plugin: &v1alpha1.PluginProvider{Endpoint: b.pluginEndpoint, Config: map[string]string{"partition": pluginPartition}}}}}
		return b.k8s.Create(ctx, s)
	}
	if b.c.Store == storeAWS {
		return b.k8s.Create(ctx, &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: storeName},
			Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{AWSSM: b.awsProvider()}}})
	}
	data := make([]v1alpha1.FakeProviderData, b.c.Keys)
	for i := range data {
		data[i] = v1alpha1.FakeProviderData{Key: fmt.Sprintf("key-%d", i), Value: fmt.Sprintf(`{"password":"value-%d"}`, i)}
	}
	s := &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: storeName},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{
			Fake: &v1alpha1.FakeProvider{Data: data, Latency: &metav1.Duration{Duration: b.c.Latency}}}}}
	return b.k8s.Create(ctx, s)
}

func (b *bench) waitStoreReady(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var s v1alpha1.ClusterSecretStore
		if err := b.k8s.Get(ctx, client.ObjectKey{Name: storeName}, &s); err != nil {
			return err
		}
		if s.Status.Phase == v1alpha1.StorePhaseRunning {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the store did not become ready")
}

func (b *bench) newES(ns, name string, key int) *v1alpha1.ExternalSecret {
	return &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExternalSecretSpec{
			SecretStoreRef:  v1alpha1.StoreRef{Name: storeName, Kind: v1alpha1.ClusterSecretStoreKind},
			RefreshInterval: &metav1.Duration{Duration: b.c.Refresh},
			Data: []v1alpha1.ExternalSecretData{{SecretKey: "password",
				RemoteRef: v1alpha1.RemoteReference{Key: fmt.Sprintf("key-%d", key), Property: "password"}}},
		}}
}

// createAndWait creates the ExternalSecrets and returns the time from the
// first create until every target exists. Targets are counted from a watch
// (of metadata, by label), which costs the API server one event per target;
// polling with lists would cost it a list of every target so far, each time.
func (b *bench) createAndWait(ctx context.Context, ctrl *controller) (time.Duration, error) {
	for i := 0; i < b.c.Namespaces; i++ {
		ns := fmt.Sprintf("bench-%d", i)
		b.esNS = append(b.esNS, ns)
		if err := b.ensureNamespace(ctx, ns); err != nil {
			return 0, err
		}
	}
	targets, stop, err := b.watchTargets(ctx)
	if err != nil {
		return 0, err
	}
	defer stop()
	start := time.Now()
	errc := make(chan error, 1)
	var created atomic.Int64
	go func() {
		errc <- b.parallel(ctx, b.c.N, func(i int) error {
			err := b.k8s.Create(ctx, b.newES(b.esNS[i%len(b.esNS)], fmt.Sprintf("es-%d", i), i%b.c.Keys))
			if err == nil && created.Add(1) == int64(b.c.N) {
				fmt.Fprintf(os.Stderr, "  all %d ExternalSecrets created after %.1f s\n", b.c.N, time.Since(start).Seconds())
			}
			return err
		})
	}()
	deadline := start.Add(30 * time.Minute)
	lastReport := start
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		select {
		case err := <-errc:
			if err != nil {
				return 0, err
			}
		default:
		}
		n := targets()
		if n >= b.c.N {
			return time.Since(start), nil
		}
		if time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			depth := -1.0
			if m, err := ctrl.scrape(); err == nil {
				depth = m.sum("workqueue_depth", `name="externalsecret"`)
			}
			fmt.Fprintf(os.Stderr, "  %4.0f s: %d ExternalSecrets created, %d targets, %.0f queued in the controller\n",
				time.Since(start).Seconds(), created.Load(), n, depth)
		}
	}
	return 0, fmt.Errorf("not every target was created within 30 minutes")
}

// watchTargets counts the Secrets labelled as Watchword's in the
// benchmark's namespaces, from a metadata watch.
func (b *bench) watchTargets(ctx context.Context) (count func() int, stop func(), err error) {
	mc, err := metadata.NewForConfig(b.cfg)
	if err != nil {
		return nil, nil, err
	}
	inf := secretwatch.Informer(mc, "", func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/managed-by=watchword" })
	var n atomic.Int64
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok && strings.HasPrefix(m.Namespace, "bench-") && strings.HasPrefix(m.Name, "es-") {
				n.Add(1)
			}
		},
	})
	wctx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(wctx)
	if !toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		cancel()
		return nil, nil, fmt.Errorf("the target watch did not start")
	}
	return func() int { return int(n.Load()) }, cancel, nil
}

// verify checks every target's data.
func (b *bench) verify(ctx context.Context) (int, error) {
	wrong := 0
	seen := 0
	for _, ns := range b.esNS {
		var list corev1.SecretList
		if err := b.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		for _, s := range list.Items {
			var i int
			if _, err := fmt.Sscanf(s.Name, "es-%d", &i); err != nil {
				continue
			}
			seen++
			if string(s.Data["password"]) != fmt.Sprintf("value-%d", i%b.c.Keys) {
				wrong++
			}
		}
	}
	return wrong + (b.c.N - seen), nil
}

// steady watches c.Cycles refresh cycles after letting one pass, scraping
// the controller every second.
func (b *bench) steady(_ context.Context, ctrl *controller, res *result) error {
	time.Sleep(b.c.Refresh) // the first cycle after creation is irregular by design
	var perSec []float64
	first, err := ctrl.scrape()
	if err != nil {
		return err
	}
	prev := first
	began := time.Now()
	end := began.Add(time.Duration(b.c.Cycles) * b.c.Refresh)
	for time.Now().Before(end) {
		time.Sleep(time.Second)
		m, err := ctrl.scrape()
		if err != nil {
			return err
		}
		perSec = append(perSec, m.sum("watchword_sync_duration_seconds_count")-prev.sum("watchword_sync_duration_seconds_count"))
		prev = m
	}
	calls := prev.sum("watchword_provider_calls_total", `operation="get"`) - first.sum("watchword_provider_calls_total", `operation="get"`)
	batches := prev.sum("watchword_provider_calls_total", `operation="batchGet"`) - first.sum("watchword_provider_calls_total", `operation="batchGet"`)
	checks := prev.sum("watchword_provider_calls_total", `operation="version"`) - first.sum("watchword_provider_calls_total", `operation="version"`)
	// The last scrape lands a little after the end: count per cycle of
	// the time actually observed.
	cycles := time.Since(began).Seconds() / b.c.Refresh.Seconds()
	res.CallsPerCycle = calls / cycles
	b.awsCalls(fmt.Sprintf("over %.1f refresh cycles", cycles))
	res.BatchCallsPerCycle = batches / cycles
	res.VersionCallsPerCycle = checks / cycles
	total, busiest := 0.0, 0.0
	for _, v := range perSec {
		total += v
		busiest = max(busiest, v)
	}
	if len(perSec) > 0 {
		res.RefreshMeanPerSec = total / float64(len(perSec))
	}
	res.RefreshBusiestSec = busiest
	if res.RefreshMeanPerSec > 0 {
		res.BusiestOverMean = busiest / res.RefreshMeanPerSec
	}
	return nil
}

// newDuringFanOut edits the store so that every ExternalSecret is queued
// again, creates a new one at once and times its sync; then it waits for the
// queue to drain.
func (b *bench) newDuringFanOut(ctx context.Context, ctrl *controller) (float64, error) {
	if b.c.Store != storeFake {
		// The fan-out is started by a change of the fake store's data.
		fmt.Fprintln(os.Stderr, "skipping the fan-out measure: it needs -store fake")
		return 0, nil
	}
	// The controllers write the store's status meanwhile: the edit is
	// made again on the latest version after a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s v1alpha1.ClusterSecretStore
		if err := b.k8s.Get(ctx, client.ObjectKey{Name: storeName}, &s); err != nil {
			return err
		}
		s.Spec.Fake.Data = append(s.Spec.Fake.Data, v1alpha1.FakeProviderData{Key: "unused", Value: "x"})
		return b.k8s.Update(ctx, &s)
	})
	if err != nil {
		return 0, err
	}
	time.Sleep(200 * time.Millisecond) // let the store event fan out first
	took, err := b.timeNewES(ctx, "es-new-during-fanout")
	if err != nil {
		return 0, err
	}
	// Let the fan-out drain; periodic refreshes keep some low-priority
	// work queued, so "drained" is a small remainder.
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := ctrl.scrape()
		if err == nil && m.sum("workqueue_depth", `name="externalsecret"`) < float64(b.c.N/50+1) {
			break
		}
		time.Sleep(time.Second)
	}
	return took, nil
}

func (b *bench) timeNewES(ctx context.Context, name string) (float64, error) {
	es := b.newES(b.esNS[0], name, 0)
	start := time.Now()
	if err := b.k8s.Create(ctx, es); err != nil {
		return 0, err
	}
	for time.Since(start) < 5*time.Minute {
		var s corev1.Secret
		if err := b.k8s.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name}, &s); err == nil {
			return time.Since(start).Seconds(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("the new ExternalSecret %s was not synced within 5 minutes", name)
}

// leaseTaken is when the controller started after since took the leader
// election lease, as the lease records it (acquireTime, written by the
// controller's clock, which is this machine's).
func (b *bench) leaseTaken(ctx context.Context, since time.Time) (time.Time, error) {
	var lease coordinationv1.Lease
	key := client.ObjectKey{Namespace: leaseNamespace, Name: "watchword-leader"}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := b.k8s.Get(ctx, key, &lease); err != nil {
			continue
		}
		if t := lease.Spec.AcquireTime; t != nil && !t.Time.Before(since.Truncate(time.Second)) {
			return t.Time, nil
		}
	}
	return time.Time{}, fmt.Errorf("lease %s not taken since %s", key, since.Format(time.TimeOnly))
}

// newDuringRestart creates one ExternalSecret right after the controller
// started and times its sync, while the controller works through the
// resync of every other ExternalSecret.
func (b *bench) newDuringRestart(ctx context.Context) (float64, error) {
	return b.timeNewES(ctx, "es-new-during-restart")
}

// profileSync, if set, is how long the CPU profiles of the sync last.
var profileSync time.Duration

// aloneProfile is the longest profile of one of the three writes alone,
// each measured on its own before the controller starts.
const aloneProfile = 4 * time.Second

// profile takes a CPU profile of kube-apiserver and, with controller and
// if it serves them, of the controller, over the next d, side by side,
// into files beside the JSON result named after phase. The returned
// function waits for them.
func (b *bench) profile(ctx context.Context, phase string, d time.Duration, controller bool) (wait func()) {
	if d <= 0 {
		return func() {}
	}
	seconds := strconv.Itoa(int(d.Seconds()))
	base := strings.TrimSuffix(b.c.Out, filepath.Ext(b.c.Out)) + "-" + strings.ReplaceAll(phase, " ", "-")
	var wg sync.WaitGroup
	save := func(file string, get func() ([]byte, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := get()
			if err == nil {
				err = os.WriteFile(file, raw, 0o644)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "  profile %s: %v\n", file, err)
				return
			}
			fmt.Fprintf(os.Stderr, "  wrote %s\n", file)
		}()
	}
	save(base+"-apiserver.pprof", func() ([]byte, error) {
		return b.kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).
			Timeout(d + time.Minute).DoRaw(ctx)
	})
	if controller && pprofAddr != "" {
		save(base+"-controller.pprof", func() ([]byte, error) {
			resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/profile?seconds=" + seconds)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			return io.ReadAll(resp.Body)
		})
	}
	return wg.Wait
}

// apiserverMetrics scrapes the API server's own metrics.
func (b *bench) apiserverMetrics(ctx context.Context) (metrics, error) {
	raw, err := b.kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(strings.NewReader(string(raw)))
}

// eventsSince counts the events of the ExternalSecrets' namespaces written
// at or after since, by "type reason" and by whether they were written
// over a minute after what they report: events written late, for work
// done long before, are a backlog of the event recorder.
func (b *bench) eventsSince(ctx context.Context, since time.Time) (map[string]float64, error) {
	out := map[string]float64{}
	for _, ns := range b.esNS {
		var list corev1.EventList
		if err := b.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, e := range list.Items {
			if e.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
				continue
			}
			age := "new"
			if at := e.LastTimestamp.Time; !at.IsZero() && at.Before(e.CreationTimestamp.Add(-time.Minute)) {
				age = "written over a minute after it happened"
			}
			class := e.Type + " " + e.Reason + " (" + age + ")"
			if out[class] == 0 {
				fmt.Fprintf(os.Stderr, "  an event of %s: %s/%s, count %d, first %s, last %s, event time %s, written %s\n", class,
					e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Count, e.FirstTimestamp.Format(time.TimeOnly),
					e.LastTimestamp.Format(time.TimeOnly), e.EventTime.Format(time.TimeOnly+".000"), e.CreationTimestamp.Format(time.TimeOnly))
			}
			out[class]++
		}
	}
	return out, nil
}

// writeVerbs are the verbs of apiserver_request_total that write.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"}

// steadyWrites counts the API server's writes over c.Steady, by verb and
// by resource, per minute, and the target they are held to: at most one
// write per ExternalSecret per status period, and none while the window
// lies within the first period after the sync.
func (b *bench) steadyWrites(ctx context.Context, res *result, syncEnd time.Time) error {
	before, err := b.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	began := time.Now()
	time.Sleep(b.c.Steady)
	after, err := b.apiserverMetrics(ctx)
	if err != nil {
		return err
	}
	ended := time.Now()
	minutes := ended.Sub(began).Minutes()
	res.SteadyMinutes = minutes
	res.SteadyWritesPerMinByVerb = map[string]float64{}
	res.SteadyWritesPerMinByResource = map[string]float64{}
	for _, verb := range writeVerbs {
		f := `verb="` + verb + `"`
		if d := after.since(before, "apiserver_request_total", f); d > 0 {
			res.SteadyWritesPerMinByVerb[verb] = d / minutes
			res.SteadyWritesPerMin += d / minutes
		}
		for resource, d := range after.sinceBy(before, "apiserver_request_total", "resource", f) {
			res.SteadyWritesPerMinByResource[resource] += d / minutes
		}
	}
	for _, r := range []string{"externalsecrets", "secrets", "events"} {
		res.SteadyWatchwordWritesPerMin += res.SteadyWritesPerMinByResource[r]
	}
	if res.SteadyWritesPerMinByResource["events"] > 0 {
		res.SteadyEvents, err = b.eventsSince(ctx, began)
		if err != nil {
			return err
		}
	}
	period := b.c.StatusPeriod
	if period <= 0 {
		period = time.Hour
	}
	res.SteadyInFirstPeriod = ended.Sub(syncEnd) < period
	res.SteadyTargetPerMin = float64(b.c.N) / period.Minutes()
	if res.SteadyInFirstPeriod {
		res.SteadyTargetPerMin = 0
	}
	return nil
}

// longestBound is the least bucket bound of histogram name under which
// every observation from before to after fell, such as "0.001": the
// longest of them is at most that. "none" if there was none, "+Inf" if
// one was longer than the last bound.
func longestBound(after, before metrics, name string) string {
	total := after.since(before, name+"_count")
	if total == 0 {
		return "none"
	}
	grew := after.sinceBy(before, name+"_bucket", "le")
	least, found := math.Inf(1), false
	for le, n := range grew {
		bound, err := strconv.ParseFloat(le, 64)
		if err == nil && n >= total && bound < least {
			least, found = bound, true
		}
	}
	if !found || math.IsInf(least, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(least, 'g', -1, 64)
}
