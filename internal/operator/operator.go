// Package operator wires the manager, caches, provider clients and
// controllers together. `watchword controller` and `watchword-dev` both run
// it.
package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/externalsecret"
	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/events"
	"github.com/watchword-dev/watchword/internal/notify"
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/refreshhook"
	"github.com/watchword-dev/watchword/internal/webhook"
)

// Options configure the operator.
type Options struct {
	// Registry lists the providers this build supports.
	Registry provider.Registry
	// ControllerClass: serve only stores whose spec.controller equals it.
	ControllerClass string
	// Workers is the number of concurrent ExternalSecret reconciles.
	Workers int
	// StoreCallsPerMinute is the call budget of a store that sets none
	// (spec.limits.callsPerMinute); zero or less: none.
	StoreCallsPerMinute float64
	// StoreMaxConcurrentCalls bounds the calls in flight to a store that
	// sets no spec.limits.maxConcurrentCalls; zero means half of Workers
	// (at least 1), less than zero no bound.
	StoreMaxConcurrentCalls int
	// QPS and Burst are one token bucket that every request of the
	// controller to the API server draws from, whatever its kind or client
	// (see restConfigs); leader election is apart from it. A QPS of zero
	// or less means no client-side limit.
	QPS   float32
	Burst int
	// MetricsAddr, HealthAddr and PprofAddr are listen addresses; "0" or
	// empty disables.
	MetricsAddr string
	HealthAddr  string
	PprofAddr   string
	// MetricsSecure serves the metrics endpoint over HTTPS (a self-signed
	// certificate, or MetricsCertDir's tls.crt and tls.key) and lets in
	// only a client whose bearer token the API server authenticates
	// (TokenReview) and authorizes for `get` of the non-resource URL
	// /metrics (SubjectAccessReview).
	MetricsSecure  bool
	MetricsCertDir string
	// RefreshHookAddr is the listen address of the refresh endpoint
	// (/hooks/refresh, docs/operations.md); "0" or empty disables it.
	RefreshHookAddr string
	// RefreshHook configures the endpoint: its timestamp window, bearer
	// token, rate limits and the pod it labels while it leads.
	RefreshHook refreshhook.Options
	// LeaderElection makes one replica among those with the same lease
	// active. The lease is LeaderElectionID in LeaderElectionNamespace;
	// an empty ID is derived from ControllerClass (see LeaderElectionID),
	// so instances of different classes never wait for each other. A
	// replica that stops cleanly releases the lease for a successor.
	LeaderElection          bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election;
	// zero means controller-runtime's defaults (15s, 10s and 2s).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// SkipNameValidation lets several operators run in one process (tests):
	// controller-runtime otherwise refuses a second controller of one name.
	SkipNameValidation bool
	// Logger is the manager's and the controllers' logger; the zero value
	// means controller-runtime's global one (ctrl.SetLogger). Tests that
	// run several operators in one process give each its own.
	Logger logr.Logger
	// RestartRate caps the restarts of workloads for rotations across the
	// cluster (docs/rotation.md); a zero rate means no cap.
	RestartRate restart.Rate
	// RestartHeldWarningAfter is how long a restart is held for a rollout
	// before the hold is told in a Warning (docs/rotation.md); zero tells
	// it at once.
	RestartHeldWarningAfter time.Duration
	// NormalEventsPerSecond caps the Normal events sent, the rest summed
	// up once every 30 s per namespace, kind and reason (Warnings are
	// never held back); zero means no cap.
	NormalEventsPerSecond float64
	// StatusRefreshPeriod is how often at most a refresh that changed
	// nothing writes an ExternalSecret's status to move its refreshTime
	// (docs/operations.md); zero means one hour.
	StatusRefreshPeriod time.Duration
	// Clock is injected by tests; nil means the wall clock.
	Clock engine.Clock
	// Namespaces, when set, restricts every list and watch to these
	// namespaces, so that Roles in them are enough (`--namespace`,
	// namespaced.go). ClusterSecretStores are then not served.
	Namespaces []string

	// NotifySecret, when named, is the Secret that holds the URLs of the
	// receivers of notifications of restarts and held restarts
	// (docs/notifications.md); Notify tunes their delivery. No name: no
	// notifications.
	NotifySecret types.NamespacedName
	Notify       notify.Options
	// DigestKeySecret is the Secret that holds the installation's digest
	// key, made by the operator when it does not exist (digestkey.go). No
	// name: digests recorded in status are plain SHA-256.
	DigestKeySecret types.NamespacedName
	// DigestKeyReload is how often that Secret is read again, for a
	// rotation to take effect; zero means a minute.
	DigestKeyReload time.Duration

	// Webhook, when set, serves the admission webhook that refuses a
	// second writer of a target (docs/operations.md); nil: not served.
	Webhook *webhook.Options
}

// DefaultOptions are sized for thousands of ExternalSecrets.
func DefaultOptions() Options {
	return Options{Workers: 16, QPS: DefaultQPS, Burst: DefaultBurst, MetricsAddr: ":8080", HealthAddr: ":8081",
		RestartRate: restart.DefaultRate, RestartHeldWarningAfter: restart.DefaultHeldWarningAfter,
		StatusRefreshPeriod: externalsecret.DefaultStatusPeriod, NormalEventsPerSecond: events.DefaultPerSecond}
}

// DefaultQPS and DefaultBurst size the controller's one client budget
// (Options.QPS, Options.Burst) so that it does not pace a large sync. The
// benchmark's sync of 10,000 ExternalSecrets on a two-core machine went
// at up to about 250 a second, against a bound of the API server's writes
// of up to about 330 a second (docs/benchmark.md), and an
// ExternalSecret costs the controller about three requests in a sync (at
// first its target's create, its status write and an event; on a change
// its target's read and update and its status write): up to about 1,000
// requests a second in all. 1,500 a second leaves half as much again for
// a faster API server and for the rest of the controller (the caches'
// lists, credentials, restarts); the burst is two seconds of it, as it
// was when each kind had a bucket of 500 and 1,000.
const (
	DefaultQPS   = 1500
	DefaultBurst = 3000
)

// restConfigs are the configuration of all of the controller's clients
// and that of leader election's, both copies of cfg.
//
// The first carries one token bucket of opts.QPS and opts.Burst, which
// all of the controller's requests share. A rest.Config's RateLimiter is
// kept as the same instance by every copy (rest.CopyConfig, the
// clientsets' shallow copies) and used as it is by every client built
// from one: controller-runtime's per-kind clients, the cache's lists, the
// status writes, the event recorder, discovery and the hand-made clients
// here. Without it each of those clients builds a bucket of its own from
// QPS and Burst, and the flags' figures were a limit per kind rather than
// in all. (Watches take no token.) A QPS of zero or less: no client-side
// limit.
//
// Leader election is outside the budget: a controller that spends it on
// a sync must still renew its lease within the renew deadline, or it
// loses the lease and stops. The election paces itself (a read and a
// write of the lease every retry period), so it has no client-side limit;
// its clients have their own connection too (controller-runtime builds
// one for a config of its own).
//
// The kubernetes provider's clients are not built from it: they act as a
// store's identity, on the store's cluster, and are a store's calls,
// bounded by the store's call gate (spec.limits) like every provider's.
func restConfigs(cfg *rest.Config, opts Options) (shared, leader *rest.Config) {
	shared = rest.CopyConfig(cfg)
	if shared.UserAgent == "" {
		shared.UserAgent = "watchword"
	}
	leader = rest.CopyConfig(shared)
	// Below zero, client-go builds no token bucket.
	leader.QPS, leader.RateLimiter = -1, nil
	shared.QPS, shared.Burst, shared.RateLimiter = -1, opts.Burst, nil
	if opts.QPS > 0 {
		// A bucket of no tokens would refuse every request.
		shared.QPS, shared.RateLimiter = opts.QPS, flowcontrol.NewTokenBucketRateLimiter(opts.QPS, max(opts.Burst, 1))
	}
	return shared, leader
}

// storeLimits are the call limits of a store that sets none of its own.
func storeLimits(opts Options) engine.GateLimits {
	l := engine.GateLimits{CallsPerMinute: opts.StoreCallsPerMinute, MaxConcurrent: opts.StoreMaxConcurrentCalls}
	if l.MaxConcurrent == 0 {
		l.MaxConcurrent = max(1, opts.Workers/2)
	}
	return l
}

// leaderElectionBase is the lease of the default (empty) class.
const leaderElectionBase = "watchword-leader"

// LeaderElectionID is the name of the leader election lease of a
// controller class: watchword-leader for the default class and
// watchword-leader-<class> for another, when that is a valid object name
// (a DNS-1123 subdomain), as it is for every class a store can name.
// Otherwise the class is reduced to lowercase letters, digits and dashes,
// shortened, and followed by a hash of the class as given, so that two
// classes do not share a lease.
func LeaderElectionID(class string) string {
	if class == "" {
		return leaderElectionBase
	}
	id := leaderElectionBase + "-" + class
	if len(validation.IsDNS1123Subdomain(id)) == 0 {
		return id
	}
	sum := sha256.Sum256([]byte(class))
	hash := hex.EncodeToString(sum[:5])
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(class) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	// The result is kept to a DNS-1123 label's 63 characters.
	keep := validation.DNS1123LabelMaxLength - len(leaderElectionBase) - len(hash) - 2
	name := b.String()
	if len(name) > keep {
		name = name[:keep]
	}
	name = strings.Trim(name, "-")
	if name == "" {
		return leaderElectionBase + "-" + hash
	}
	return leaderElectionBase + "-" + name + "-" + hash
}

// Scheme has the kinds the operator uses.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Operator is a configured manager, ready to start.
type Operator struct {
	Manager ctrl.Manager
	Fetcher *engine.Fetcher
}

// New builds the manager and adds the operator's parts to it (parts.go),
// in this order: a part may use what the parts before it built.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Operator, error) {
	p, err := newParts(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	for _, part := range []struct {
		name string
		add  func(context.Context) error
	}{
		{"the watches of Secrets named by ExternalSecrets and stores", p.addNamedSecrets},
		{"the store clients", p.addClients},
		{"the event limiter", p.addEvents},
		{"the digest keys", p.addDigestKeys},
		{"the ExternalSecret controller", p.addExternalSecrets},
		{"the store watches", p.addStoreWatches},
		{"the store controllers", p.addStores},
		{"the restart controllers", p.addRestarts},
		{"the PushSecret controller", p.addPushSecrets},
		{"the ClusterExternalSecret and ClusterPushSecret controllers", p.addClusterFanOut},
		{"the caches", p.warmCaches},
		{"the admission webhook", p.addWebhook},
		{"the refresh endpoint", p.addRefreshHook},
		{"the health checks", p.addHealthChecks},
		{"the sweeps of unused reads and watches", p.addSweeps},
		{"the staleness metrics", p.addFreshness},
	} {
		if err := part.add(ctx); err != nil {
			return nil, fmt.Errorf("setting up %s: %w", part.name, err)
		}
	}
	return &Operator{Manager: p.mgr, Fetcher: p.fetcher}, nil
}

// hookNotifier hands the refresh endpoint's notifications to the
// ExternalSecret controller.
type hookNotifier struct{ es *externalsecret.Reconciler }

func (n hookNotifier) Notify(ctx context.Context, kind, namespace, name string, keys []string) (int, error) {
	queued, err := n.es.Notify(ctx, kind, namespace, name, keys)
	if errors.Is(err, externalsecret.ErrNotRunning) {
		err = refreshhook.ErrNotRunning
	}
	return queued, err
}

// leaseHeld tells whether another replica holds the lease now: it names
// a holder and was renewed within its duration. Anything it cannot read
// counts as free.
func leaseHeld(ctx context.Context, cfg *rest.Config, namespace, name string, now time.Time) bool {
	if namespace == "" {
		// In a cluster, controller-runtime's default: the pod's namespace.
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return false
		}
		namespace = strings.TrimSpace(string(b))
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	lease, err := kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return heldAt(lease, now)
}

const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// heldAt tells whether a lease has a holder whose last renewal is within
// the lease's duration at now.
func heldAt(lease *coordinationv1.Lease, now time.Time) bool {
	sp := lease.Spec
	if sp.HolderIdentity == nil || *sp.HolderIdentity == "" || sp.RenewTime == nil || sp.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(sp.RenewTime.Add(time.Duration(*sp.LeaseDurationSeconds) * time.Second))
}

// slimTransform drops what Watchword never reads from cached objects:
// managed fields and kubectl's last-applied copy everywhere, and for the
// metadata-only caches of Secrets and ConfigMaps everything but their name,
// namespace and resourceVersion.
// Annotations in particular can hold a copy of a Secret's data
// (last-applied-configuration), and Watchword keeps none of it.
//
// Tuning, not measured apart: managed fields were about half of a cached
// object when they were first dropped (FINDINGS.md, "Memory", has the rest).
// If memory stopped mattering, only that part could go: dropping the
// last-applied copy and Secrets' annotations is for secrecy, not size.
func slimTransform(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		slim := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta}
		slim.Name, slim.Namespace, slim.ResourceVersion = m.Name, m.Namespace, m.ResourceVersion
		slim.DeletionTimestamp = m.DeletionTimestamp
		return slim, nil
	}
	if es, ok := obj.(*v1alpha1.ExternalSecret); ok {
		internExternalSecret(es)
	}
	if o, ok := obj.(client.Object); ok {
		if a := o.GetAnnotations(); a[lastApplied] != "" {
			// kubectl apply keeps a copy of the whole object here.
			a = maps.Clone(a)
			delete(a, lastApplied)
			o.SetAnnotations(a)
		}
	}
	return cache.TransformStripManagedFields()(obj)
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// durationOrNil is nil for zero, which leaves the manager's default.
func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// Start runs the operator until ctx ends.
func (o *Operator) Start(ctx context.Context) error { return o.Manager.Start(ctx) }

// rateLimiter retries failures with exponential backoff from 1s up to 5
// minutes, with ±20% jitter so that failures of one store spread out.
func rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return &jittered{inner: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute)}
}

type jittered struct {
	inner workqueue.TypedRateLimiter[reconcile.Request]
}

func (j *jittered) When(item reconcile.Request) time.Duration {
	d := j.inner.When(item)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
func (j *jittered) Forget(item reconcile.Request)          { j.inner.Forget(item) }
func (j *jittered) NumRequeues(item reconcile.Request) int { return j.inner.NumRequeues(item) }

// every runs fn every period until the manager stops.
type every struct {
	period time.Duration
	fn     func(context.Context)
}

func (e every) Start(ctx context.Context) error {
	t := time.NewTicker(e.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			e.fn(ctx)
		}
	}
}

// metricsOptions serves the metrics over plain HTTP, or with MetricsSecure
// over HTTPS behind controller-runtime's filter, which asks the API server
// to authenticate and authorize each request.
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsAddr}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.CertDir = opts.MetricsCertDir
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
