package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/operator"
)

// caseFanOut is the ClusterExternalSecret case (-case fanout): one
// ClusterExternalSecret reading -keys keys into each of -namespaces
// namespaces. It measures the store reads of the first sync and of each
// refresh cycle after it: the shared read cache should make them about
// -keys, not -namespaces × -keys.
const caseFanOut = "fanout"

// fanOutName names the ClusterExternalSecret, its stamps and their targets.
const fanOutName = "bench-fanout"

// fanOutResult holds the figures of the fan-out case.
type fanOutResult struct {
	Machine    string
	Namespaces int
	Keys       int
	Store      string
	LatencyMs  float64
	RefreshSec float64
	// SyncSeconds is from the ClusterExternalSecret's create until every
	// namespace's target holds the right data.
	SyncSeconds float64
	// Targets is how many targets hold the right data.
	Targets int
	// Reads counts the keys read from the store (a batch read of n keys
	// counts n); Calls the calls that read them. At the first sync, and
	// per refresh cycle after it.
	ReadsSync, CallsSync         float64
	ReadsPerCycle, CallsPerCycle float64
	// WithoutSharing is the reads of one cycle if every namespace read
	// every key itself.
	WithoutSharing int
}

func (r *fanOutResult) print(w io.Writer) {
	fmt.Fprintf(w, "ClusterExternalSecret fan-out on %s, store %s (latency %.0f ms), refresh %.0f s\n", r.Machine, r.Store, r.LatencyMs, r.RefreshSec)
	fmt.Fprintf(w, "  %d namespaces x %d keys: %d targets right after %.1f s\n", r.Namespaces, r.Keys, r.Targets, r.SyncSeconds)
	fmt.Fprintf(w, "  store reads at the first sync:   %.0f keys in %.0f calls\n", r.ReadsSync, r.CallsSync)
	fmt.Fprintf(w, "  store reads per refresh cycle:   %.1f keys in %.1f calls (%d without sharing)\n", r.ReadsPerCycle, r.CallsPerCycle, r.WithoutSharing)
}

// runFanOut runs the fan-out case and writes its figures to c.Out.
func runFanOut(ctx context.Context, c config) error {
	if c.Store != storeFake && c.Store != storeAWS {
		return fmt.Errorf("-case %s: -store must be %s or %s", caseFanOut, storeFake, storeAWS)
	}
	res := &fanOutResult{Namespaces: c.Namespaces, Keys: c.Keys, Store: c.Store, LatencyMs: float64(c.Latency.Milliseconds()),
		RefreshSec: c.Refresh.Seconds(), WithoutSharing: c.Namespaces * c.Keys}
	res.Machine = fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintln(os.Stderr, "starting etcd and kube-apiserver…")
	cluster, err := localcluster.Start(localcluster.Options{NoControllerManager: true})
	if err != nil {
		return err
	}
	defer func() { _ = cluster.Stop() }()
	b, cleanup, err := newBench(cluster, c)
	if err != nil {
		return err
	}
	defer cleanup()
	ctrl, err := startController(c.Binary, b.kc)
	if err != nil {
		return err
	}
	defer ctrl.stop()
	if c.Store == storeAWS {
		if err = b.startAWSFake(ctx); err != nil {
			return err
		}
		defer b.aws.Close()
	}
	if err = b.createStore(ctx); err != nil {
		return err
	}
	if err = b.waitStoreReady(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "creating %d namespaces…\n", c.Namespaces)
	if err = b.parallel(ctx, c.Namespaces, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fan-%d", i), Labels: map[string]string{"bench": caseFanOut}}}
		return client.IgnoreAlreadyExists(b.k8s.Create(ctx, ns))
	}); err != nil {
		return err
	}

	before, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	start := time.Now()
	if err = b.k8s.Create(ctx, b.fanOutObject()); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "waiting for every namespace's target…")
	for res.Targets < c.Namespaces {
		if time.Since(start) > 30*time.Minute {
			return fmt.Errorf("only %d of %d targets were right after 30 minutes", res.Targets, c.Namespaces)
		}
		time.Sleep(time.Second)
		if res.Targets, err = b.fanOutTargets(ctx); err != nil {
			return err
		}
	}
	res.SyncSeconds = time.Since(start).Seconds()
	synced, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	res.ReadsSync, res.CallsSync = synced.reads-before.reads, synced.calls-before.calls

	fmt.Fprintf(os.Stderr, "observing %d refresh cycles of %s…\n", c.Cycles, c.Refresh)
	time.Sleep(c.Refresh) // the first cycle after creation is irregular by design
	first, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	time.Sleep(time.Duration(c.Cycles) * c.Refresh)
	last, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	res.ReadsPerCycle = (last.reads - first.reads) / float64(c.Cycles)
	res.CallsPerCycle = (last.calls - first.calls) / float64(c.Cycles)
	if res.Targets, err = b.fanOutTargets(ctx); err != nil {
		return err
	}

	res.print(os.Stdout)
	out, _ := json.MarshalIndent(res, "", "  ")
	if err = os.WriteFile(c.Out, out, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", c.Out)
	return nil
}

// newBench connects a bench to cluster and writes its kubeconfig.
func newBench(cluster *localcluster.Cluster, c config) (*bench, func(), error) {
	cfg := rest.CopyConfig(cluster.Config)
	cfg.QPS, cfg.Burst = 100000, 100000
	b := &bench{c: c, cfg: cfg}
	var err error
	if b.k8s, err = client.New(cfg, client.Options{Scheme: operator.Scheme()}); err != nil {
		return nil, nil, err
	}
	kc, err := cluster.Kubeconfig()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "watchword-bench-")
	if err != nil {
		return nil, nil, err
	}
	b.kc = filepath.Join(dir, "kubeconfig")
	if err = os.WriteFile(b.kc, kc, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return b, func() { os.RemoveAll(dir) }, nil
}

// fanOutObject is the ClusterExternalSecret of the case: every key of the
// store, in every namespace labelled bench=fanout.
func (b *bench) fanOutObject() *v1alpha1.ClusterExternalSecret {
	spec := v1alpha1.ExternalSecretSpec{
		SecretStoreRef:  v1alpha1.StoreRef{Name: storeName, Kind: v1alpha1.ClusterSecretStoreKind},
		RefreshInterval: &metav1.Duration{Duration: b.c.Refresh},
	}
	for i := range b.c.Keys {
		spec.Data = append(spec.Data, v1alpha1.ExternalSecretData{SecretKey: fmt.Sprintf("k%d", i),
			RemoteRef: v1alpha1.RemoteReference{Key: fmt.Sprintf("key-%d", i), Property: "password"}})
	}
	return &v1alpha1.ClusterExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: fanOutName},
		Spec: v1alpha1.ClusterExternalSecretSpec{ExternalSecretSpec: spec,
			NamespaceTargets: v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"bench": caseFanOut}}}}}}
}

// fanOutTargets counts the targets that hold every key's value.
func (b *bench) fanOutTargets(ctx context.Context) (int, error) {
	var list corev1.SecretList
	if err := b.k8s.List(ctx, &list, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "watchword"})}); err != nil {
		return 0, err
	}
	right := 0
	for _, s := range list.Items {
		if s.Name != fanOutName || len(s.Data) != b.c.Keys {
			continue
		}
		ok := true
		for i := range b.c.Keys {
			ok = ok && string(s.Data[fmt.Sprintf("k%d", i)]) == fmt.Sprintf("value-%d", i)
		}
		if ok {
			right++
		}
	}
	return right, nil
}

// readCounts are the store's reads so far.
type readCounts struct{ reads, calls float64 }

// storeReads counts the store's reads: for the AWS fake, as the fake
// answered them (a batch counts its ids); for the fake provider, which
// runs in the controller, from the controller's provider call counter.
func (b *bench) storeReads(ctrl *controller) (readCounts, error) {
	if b.aws != nil {
		ids := 0
		for _, n := range b.aws.BatchSizes("secretsmanager:BatchGetSecretValue") {
			ids += n
		}
		get := b.aws.Calls("secretsmanager:GetSecretValue")
		return readCounts{reads: float64(ids + get), calls: float64(get + b.aws.Calls("secretsmanager:BatchGetSecretValue"))}, nil
	}
	m, err := ctrl.scrape()
	if err != nil {
		return readCounts{}, err
	}
	get := m.sum("watchword_provider_calls_total", `operation="get"`)
	return readCounts{reads: get, calls: get}, nil
}
