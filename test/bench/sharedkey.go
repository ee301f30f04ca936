package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/localcluster"
	"github.com/watchword-dev/watchword/internal/refreshhook"
)

// caseSharedKey is the case of one remote key shared by many
// ExternalSecrets (-case sharedkey): -n ExternalSecrets read the same key
// of the fake AWS; the key's value changes there and a signed
// notification to the refresh endpoint names it. It measures the time
// from the change to each target holding the new value.
const caseSharedKey = "sharedkey"

// The key every ExternalSecret of the case reads, and the Secret that
// holds the store's refresh hook secret.
const (
	sharedKey        = "key-0"
	sharedHookSecret = "bench-refresh-hook"
)

// sharedKeyResult holds the figures of the shared-key case.
type sharedKeyResult struct {
	Machine     string  `json:"machine"`
	N           int     `json:"externalsecrets"`
	Namespaces  int     `json:"namespaces"`
	LatencyMs   float64 `json:"store_latency_ms"`
	SyncSeconds float64 `json:"first_sync_seconds"`
	// NotifyStatus and Queued are the refresh endpoint's answer; NotifyMs
	// how long it took to give it.
	NotifyStatus int     `json:"notify_status"`
	Queued       int     `json:"notify_queued"`
	NotifyMs     float64 `json:"notify_ms"`
	// Updated is how many targets hold the new value; the seconds are
	// from the change in the store to each target's update, as the
	// benchmark's watch of the targets saw it.
	Updated    int     `json:"targets_updated"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
	// Reads counts the keys read from the store, and Calls the calls that
	// read them, from the change until every target was updated.
	Reads float64 `json:"store_reads"`
	Calls float64 `json:"store_calls"`
}

func (r *sharedKeyResult) print(w io.Writer) {
	fmt.Fprintf(w, "One remote key shared by %d ExternalSecrets over %d namespaces on %s, store aws (latency %.0f ms)\n", r.N, r.Namespaces, r.Machine, r.LatencyMs)
	fmt.Fprintf(w, "  first sync:                          %.1f s\n", r.SyncSeconds)
	fmt.Fprintf(w, "  refresh endpoint's answer:           %d, %d queued, in %.0f ms\n", r.NotifyStatus, r.Queued, r.NotifyMs)
	fmt.Fprintf(w, "  targets updated:                     %d of %d\n", r.Updated, r.N)
	fmt.Fprintf(w, "  from the change to a target updated: p50 %.2f s, p99 %.2f s, max %.2f s\n", r.P50Seconds, r.P99Seconds, r.MaxSeconds)
	fmt.Fprintf(w, "  store reads after the change:        %.0f keys in %.0f calls\n", r.Reads, r.Calls)
}

// runSharedKey runs the shared-key case and writes its figures to c.Out.
// The store is the fake AWS: a change of the fake provider's data is an
// edit of the store object, which refreshes every ExternalSecret by
// itself, so the endpoint's part could not be told apart.
func runSharedKey(ctx context.Context, c config) error {
	if c.Store != storeAWS {
		return fmt.Errorf("-case %s: -store must be %s (a change of the fake store's data is a store edit, which refreshes every ExternalSecret without the endpoint)", caseSharedKey, storeAWS)
	}
	// One key; a refresh interval that does not come round during the
	// case, so that only the notification refreshes.
	c.Keys, c.Refresh = 1, time.Hour
	res := &sharedKeyResult{N: c.N, Namespaces: c.Namespaces, LatencyMs: float64(c.Latency.Milliseconds()),
		Machine: fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
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
	hookAddr, err := freeAddr()
	if err != nil {
		return err
	}
	controllerFlags += " --refresh-hook-bind-address=" + hookAddr
	ctrl, err := startController(c.Binary, b.kc)
	if err != nil {
		return err
	}
	defer ctrl.stop()
	if err = b.startAWSFake(ctx); err != nil {
		return err
	}
	defer b.aws.Close()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	if err = b.k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: awsKeysNamespace, Name: sharedHookSecret},
		Data: map[string][]byte{"secret": secret}}); err != nil {
		return err
	}
	if err = b.k8s.Create(ctx, &v1alpha1.ClusterSecretStore{ObjectMeta: metav1.ObjectMeta{Name: storeName},
		Spec: v1alpha1.ClusterSecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{AWSSM: b.awsProvider()},
			RefreshHook: &v1alpha1.RefreshHook{SecretRef: v1alpha1.SecretKeySelector{Namespace: awsKeysNamespace, Name: sharedHookSecret, Key: "secret"}}}}); err != nil {
		return err
	}
	if err = b.waitStoreReady(ctx); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "creating %d ExternalSecrets of one key…\n", c.N)
	synced, err := b.createAndWait(ctx, ctrl)
	if err != nil {
		return err
	}
	res.SyncSeconds = synced.Seconds()

	// The new value is unique to the run; each target's first update to
	// it is timed from the watch of the targets' data.
	value := fmt.Sprintf("rotated-%d", time.Now().UnixNano())
	updated, stopWatch, err := b.watchValues(ctx, value)
	if err != nil {
		return err
	}
	defer stopWatch()
	before, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "changing the key and notifying the refresh endpoint…")
	changed := time.Now()
	b.aws.PutSecretString(sharedKey, fmt.Sprintf(`{"password":%q}`, value))
	res.NotifyStatus, res.Queued, err = notifyRefresh(ctx, hookAddr, secret)
	res.NotifyMs = float64(time.Since(changed).Microseconds()) / 1000
	if err != nil {
		return err
	}
	if res.NotifyStatus != http.StatusAccepted {
		return fmt.Errorf("the refresh endpoint answered %d", res.NotifyStatus)
	}
	deadline := changed.Add(10 * time.Minute)
	for len(updated()) < c.N && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	after, err := b.storeReads(ctrl)
	if err != nil {
		return err
	}
	res.Reads, res.Calls = after.reads-before.reads, after.calls-before.calls
	var took []float64
	for _, at := range updated() {
		took = append(took, at.Sub(changed).Seconds())
	}
	res.Updated = len(took)
	slices.Sort(took)
	res.P50Seconds, res.P99Seconds = percentile(took, 0.50), percentile(took, 0.99)
	if len(took) > 0 {
		res.MaxSeconds = took[len(took)-1]
	}

	res.print(os.Stdout)
	out, _ := json.MarshalIndent(res, "", "  ")
	if err = os.WriteFile(c.Out, out, 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", c.Out)
	if res.Updated < c.N {
		return fmt.Errorf("only %d of %d targets held the new value 10 minutes after the change", res.Updated, c.N)
	}
	return nil
}

// percentile is the p-th of sorted values (nearest rank); 0 if none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// notifyRefresh sends the signed notification that the shared key of the
// store changed, and returns the endpoint's status and its count of
// ExternalSecrets queued.
func notifyRefresh(ctx context.Context, addr string, secret []byte) (status, queued int, err error) {
	body, err := json.Marshal(refreshhook.Notification{Store: refreshhook.StoreRef{Kind: v1alpha1.ClusterSecretStoreKind, Name: storeName}, Keys: []string{sharedKey}})
	if err != nil {
		return 0, 0, err
	}
	ts, sig := refreshhook.Sign(body, secret, time.Now())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+refreshhook.Path, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(refreshhook.TimestampHeader, ts)
	req.Header.Set(refreshhook.SignatureHeader, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var answer struct {
		Queued int `json:"queued"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode == http.StatusAccepted {
		if err = json.Unmarshal(raw, &answer); err != nil {
			return resp.StatusCode, 0, fmt.Errorf("the refresh endpoint's answer: %w", err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "the refresh endpoint answered %d: %s\n", resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return resp.StatusCode, answer.Queued, nil
}

// watchValues watches the benchmark's targets, with their data, and
// records when each first holds value under "password".
func (b *bench) watchValues(ctx context.Context, value string) (updated func() map[string]time.Time, stop func(), err error) {
	kube, err := kubernetes.NewForConfig(b.cfg)
	if err != nil {
		return nil, nil, err
	}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "app.kubernetes.io/managed-by=watchword"
	}))
	inf := f.Core().V1().Secrets().Informer()
	var mu sync.Mutex
	at := map[string]time.Time{}
	seen := func(obj any) {
		now := time.Now()
		s, ok := obj.(*corev1.Secret)
		if !ok || !strings.HasPrefix(s.Namespace, "bench-") || !strings.HasPrefix(s.Name, "es-") || string(s.Data["password"]) != value {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, done := at[s.Namespace+"/"+s.Name]; !done {
			at[s.Namespace+"/"+s.Name] = now
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(wctx)
	if !toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		cancel()
		return nil, nil, fmt.Errorf("the watch of the targets' data did not start")
	}
	return func() map[string]time.Time {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(at)
	}, cancel, nil
}
