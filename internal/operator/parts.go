package operator

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/internal/controller/externalsecret"
	"github.com/watchword-dev/watchword/internal/controller/pushsecret"
	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/controller/secretstore"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/events"
	"github.com/watchword-dev/watchword/internal/metrics"
	"github.com/watchword-dev/watchword/internal/notify"
	"github.com/watchword-dev/watchword/internal/refreshhook"
	"github.com/watchword-dev/watchword/internal/secretwatch"
	"github.com/watchword-dev/watchword/internal/storeaccess"
	"github.com/watchword-dev/watchword/internal/storewatch"
	"github.com/watchword-dev/watchword/internal/webhook"
)

// parts holds what the operator's parts share while New adds them to the
// manager: each add method builds one part, from the options and from
// what the parts before it left here.
type parts struct {
	mgr   ctrl.Manager
	cfg   *rest.Config
	opts  Options
	clock engine.Clock

	// named watches the Secrets that ExternalSecrets and stores name; its
	// subscribers are the ExternalSecret controller and the two store
	// controllers.
	named                                   *secretwatch.Watch
	esChanges, storeChanges, clusterChanges <-chan event.GenericEvent
	metaClient                              metadata.Interface

	clients    *storeaccess.Clients
	fetcher    *engine.Fetcher
	recorder   record.EventRecorder
	digestKeys *engine.DigestKeys
	es         *externalsecret.Reconciler
	watches    *storewatch.Loop
}

// newParts builds the manager: its clients (one shared request budget,
// leader election apart), its caches (only what Watchword reads, slimmed)
// and its leader election.
func newParts(ctx context.Context, cfg *rest.Config, opts Options) (*parts, error) {
	cfg, leaderCfg := restConfigs(cfg, opts)
	clock := opts.Clock
	if clock == nil {
		clock = engine.RealClock
	}
	leaseID := opts.LeaderElectionID
	if leaseID == "" {
		leaseID = LeaderElectionID(opts.ControllerClass)
	}
	// A leader releases its lease when the manager stops. That is safe
	// because the process ends then: nothing of this replica runs on once
	// a successor holds the lease.
	var newCache cache.NewCacheFunc
	if len(opts.Namespaces) > 0 {
		newCache = newNamespacedCache(opts.Namespaces)
		ctrl.LoggerFrom(ctx).Info("Serving only the listed namespaces; ClusterSecretStores are not served", "namespaces", opts.Namespaces)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:                        opts.Logger,
		NewCache:                      newCache,
		Scheme:                        Scheme(),
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.HealthAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaderElectionConfig:          leaderCfg,
		LeaseDuration:                 durationOrNil(opts.LeaseDuration),
		RenewDeadline:                 durationOrNil(opts.RenewDeadline),
		RetryPeriod:                   durationOrNil(opts.RetryPeriod),
		// A standby starts its controllers' sources before it leads
		// (controller-runtime's warmup): the initial list of every
		// ExternalSecret is queued while it waits, so that once it takes
		// the lease a new ExternalSecret is not queued behind 100,000
		// replayed ones. Only a standby: warmup delays the run for the
		// lease until every source has replayed its objects, which a
		// replica that finds the lease free (a restart, the first start)
		// would spend without leading.
		// Tuning: at 100,000 a standby syncs a new ExternalSecret 0.02–0.11 s
		// after the lease (2.29 s before); warming every replica delayed a
		// restart's lease from about 25 s to 40.6 s (FINDINGS.md, "Restart and
		// takeover"). If warmup stops delaying that, leaseHeld can go.
		Controller: config.Controller{SkipNameValidation: ptr.To(opts.SkipNameValidation),
			EnableWarmup: ptr.To(opts.LeaderElection && leaseHeld(ctx, leaderCfg, opts.LeaderElectionNamespace, leaseID, time.Now()))},
		Cache: cache.Options{DefaultTransform: slimTransform, ByObject: map[client.Object]cache.ByObject{
			// Of Secrets, only the targets Watchword owns are watched (their
			// metadata, by label); credentials and Merge targets are watched
			// by name (secretwatch, whose comment has the tuning's figures).
			// Nothing else is listed or held.
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{conditions.ManagedByLabel: conditions.ManagedByValue})},

			// Of workloads, only those that opt in to restarts, by label.
			&appsv1.Deployment{}:  {Label: restart.Selector()},
			&appsv1.StatefulSet{}: {Label: restart.Selector()},
			&appsv1.DaemonSet{}:   {Label: restart.Selector()},
			&batchv1.CronJob{}:    {Label: restart.Selector()},
		}},
		Client: client.Options{Cache: &client.CacheOptions{
			// Secret and ConfigMap contents are read from the API server
			// when needed and never cached: Watchword caches only their
			// metadata, so it holds no secret it was not asked for.
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	return &parts{mgr: mgr, cfg: cfg, opts: opts, clock: clock}, nil
}

// addNamedSecrets watches the Secrets that ExternalSecrets and stores
// name (credentials, Merge targets), by name and metadata only.
func (p *parts) addNamedSecrets(context.Context) error {
	metaClient, err := metadata.NewForConfig(p.cfg)
	if err != nil {
		return err
	}
	p.metaClient = metaClient
	p.named = secretwatch.New(metaClient, externalsecret.NamedSecrets(p.mgr.GetCache(), p.opts.Registry))
	p.esChanges, p.storeChanges, p.clusterChanges = p.named.Subscribe(), p.named.Subscribe(), p.named.Subscribe()
	return p.mgr.Add(p.named)
}

// addClients builds the store clients (each store's gate and limits) and
// the fetch cache that ExternalSecrets reading the same key share.
func (p *parts) addClients(context.Context) error {
	kube, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return err
	}
	p.clients = storeaccess.NewClients(p.opts.Registry, p.named, p.mgr.GetAPIReader(), kube, p.cfg)
	p.clients.Clock = p.clock
	p.clients.Limits = storeLimits(p.opts)
	p.fetcher = engine.NewFetcher(p.clock, nil)
	return nil
}

// addEvents keeps Normal events to a rate (events.Limiter).
func (p *parts) addEvents(context.Context) error {
	//nolint:staticcheck // SA1019: the reconcilers record through record.EventRecorder; the new events API changes every call.
	recorder := events.NewLimiter(p.mgr.GetEventRecorderFor("watchword"), p.mgr.GetScheme(),
		p.opts.NormalEventsPerSecond, int(10*p.opts.NormalEventsPerSecond), events.DefaultPeriod)
	p.recorder = recorder
	return p.mgr.Add(manager.RunnableFunc(events.Start(recorder)))
}

// addDigestKeys loads the installation's digest keys (digestkey.go).
func (p *parts) addDigestKeys(ctx context.Context) error {
	keys, err := addDigestKeys(ctx, p.mgr, p.opts.DigestKeySecret, p.opts.DigestKeyReload)
	p.digestKeys = keys
	return err
}

func (p *parts) addExternalSecrets(ctx context.Context) error {
	p.es = &externalsecret.Reconciler{
		Client: p.mgr.GetClient(), Meta: p.mgr.GetCache(), Named: p.named, Clients: p.clients, Fetcher: p.fetcher,
		Recorder: p.recorder, Class: p.opts.ControllerClass, Clock: p.clock, Metrics: metrics.SyncObserver{},
		StatusPeriod: p.opts.StatusRefreshPeriod, DigestKeys: p.digestKeys,
	}
	return p.es.SetupWithManager(ctx, p.mgr, externalsecret.Options{Workers: p.opts.Workers, RateLimiter: rateLimiter(), SecretChanges: p.esChanges})
}

// addStoreWatches runs the change feeds of stores (those that can watch
// and are read from): they refresh ExternalSecrets at once, as the
// refresh endpoint does.
func (p *parts) addStoreWatches(context.Context) error {
	c := p.mgr.GetClient()
	p.watches = &storewatch.Loop{Reader: c, Clients: p.clients, Notifier: p.es, Class: p.opts.ControllerClass,
		ReadsFrom: func(ctx context.Context, kind, namespace, name string) (bool, error) {
			return externalsecret.ReadsFrom(ctx, c, kind, namespace, name)
		}}
	return p.watches.SetupWithManager(p.mgr)
}

// addStores registers the SecretStore controller and, unless the operator
// serves listed namespaces only, the ClusterSecretStore one.
func (p *parts) addStores(ctx context.Context) error {
	for _, cluster := range []bool{false, true} {
		if cluster && len(p.opts.Namespaces) > 0 {
			continue // a namespaced operator serves no ClusterSecretStore
		}
		changes, kind := p.storeChanges, v1alpha1.SecretStoreKind
		if cluster {
			changes, kind = p.clusterChanges, v1alpha1.ClusterSecretStoreKind
		}
		ss := &secretstore.Reconciler{Client: p.mgr.GetClient(), Clients: p.clients, Recorder: p.recorder,
			Class: p.opts.ControllerClass, Cluster: cluster, CredentialIndex: externalsecret.IndexStoreSecret, Watches: p.watches}
		if err := ss.SetupWithManager(ctx, p.mgr, secretstore.Options{CredentialChanges: changes,
			WatchChanges: p.watches.Subscribe(cluster), ConnectionChanges: p.clients.ConnectionChanges(kind)}); err != nil {
			return fmt.Errorf("the %s controller: %w", kind, err)
		}
	}
	return nil
}

// addRestarts registers the restart controllers, with the delivery of
// notifications of restarts when a receivers' Secret is named.
func (p *parts) addRestarts(ctx context.Context) error {
	var notifier restart.Notifier
	if p.opts.NotifySecret.Name != "" {
		n := notify.New(p.opts.Notify, notify.SecretLoader{Reader: p.mgr.GetAPIReader(), Secret: p.opts.NotifySecret}, ctrl.Log.WithName("notifications"))
		if err := p.mgr.Add(n); err != nil {
			return err
		}
		notifier = n
	}
	c := &restart.Controllers{Recorder: p.recorder, Class: p.opts.ControllerClass, Clock: p.clock}
	return c.SetupWithManager(ctx, p.mgr, restart.Options{RestartRate: p.opts.RestartRate, Namespaces: p.opts.Namespaces, DigestKeys: p.digestKeys,
		HeldWarningAfter: p.opts.RestartHeldWarningAfter, Notifier: notifier})
}

// addPushSecrets registers the PushSecret controller. The Secrets that
// PushSecrets publish are watched by name (their metadata only), by a
// watch of their own, so that a change is published at once.
func (p *parts) addPushSecrets(ctx context.Context) error {
	sources := secretwatch.New(p.metaClient, pushsecret.SourceSecrets(p.mgr.GetCache()))
	sources.Selections = pushsecret.SourceSelections(p.mgr.GetCache())
	changes := sources.Subscribe()
	if err := p.mgr.Add(sources); err != nil {
		return err
	}
	if err := p.mgr.Add(every{time.Minute, sources.Sweep}); err != nil {
		return err
	}
	ps := &pushsecret.Reconciler{Client: p.mgr.GetClient(), Sources: sources, Selected: sources, Clients: p.clients,
		Recorder: p.recorder, Class: p.opts.ControllerClass, Clock: p.clock, DigestKeys: p.digestKeys}
	return ps.SetupWithManager(ctx, p.mgr, pushsecret.Options{Workers: p.opts.Workers, RateLimiter: rateLimiter(), SourceChanges: changes})
}

func (p *parts) addClusterFanOut(ctx context.Context) error {
	return addClusterFanOut(ctx, p.mgr, p.opts)
}

// warmCaches asks the manager's cache now for every kind the controllers
// watch through it. The cache then fills them when the process starts,
// before it runs for the lease, instead of when a controller starts after
// winning it: a standby replica holds warm caches and serves new work
// within moments of taking over, and a restarted one takes the lease only
// once its lists are in. (The kinds the field indexes name are asked for
// by the indexes already.) A namespaced cache answers for the kinds it
// does not serve itself.
//
// Tuning: at 100,000 a new ExternalSecret synced 1.84 s after a restart's
// lease instead of 10.61 s, 2.29 s after a takeover's instead of 5.49 s
// (FINDINGS.md, "Restart and takeover"); if lists were quick, each
// controller could fill its caches when it starts, after the lease.
func (p *parts) warmCaches(ctx context.Context) error {
	for _, obj := range []client.Object{
		&v1alpha1.ExternalSecret{}, &v1alpha1.PushSecret{}, &v1alpha1.SecretStore{}, &v1alpha1.ClusterSecretStore{},
		&corev1.Namespace{}, externalsecret.MetadataOf("Secret"), externalsecret.MetadataOf("ConfigMap"),
	} {
		if _, err := p.mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("preparing the cache of %T: %w", obj, err)
		}
	}
	return nil
}

func (p *parts) addWebhook(ctx context.Context) error {
	if p.opts.Webhook == nil {
		return nil
	}
	return webhook.Setup(ctx, p.mgr, *p.opts.Webhook)
}

// addRefreshHook serves the signed refresh endpoint when it has an
// address.
func (p *parts) addRefreshHook(ctx context.Context) error {
	a := p.opts.RefreshHookAddr
	if a == "" || a == "0" {
		return nil
	}
	h := &refreshhook.Handler{Stores: p.mgr.GetClient(), Secrets: p.mgr.GetClient(), Notifier: hookNotifier{p.es}, Class: p.opts.ControllerClass,
		Namespaces: p.opts.Namespaces, Options: p.opts.RefreshHook}
	srv := &refreshhook.Server{Addr: a, Handler: h}
	if pod := p.opts.RefreshHook.LeaderPod; pod.Name != "" {
		srv.Leader = &refreshhook.LeaderPod{Client: p.mgr.GetClient(), Pod: pod}
		// A label this pod kept from a process that ended without
		// taking it off would send notifications to a standby; it goes
		// before this process is ready.
		srv.Leader.Remove(ctx)
	}
	return p.mgr.Add(srv)
}

func (p *parts) addHealthChecks(context.Context) error {
	if err := p.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return p.mgr.AddReadyzCheck("ping", healthz.Ping)
}

// addSweeps drops cached reads no one used for an hour, and the watches of
// Secrets nothing names any more.
func (p *parts) addSweeps(context.Context) error {
	if err := p.mgr.Add(every{5 * time.Minute, func(context.Context) { p.fetcher.Sweep(time.Hour) }}); err != nil {
		return err
	}
	return p.mgr.Add(every{time.Minute, p.named.Sweep})
}

// addFreshness serves the staleness metrics of the ExternalSecrets, by
// store, from the replica that serves them (a runnable of the leader
// only).
func (p *parts) addFreshness(context.Context) error {
	return p.mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		remove := metrics.AddFreshnessSource(p.es.Freshness)
		<-ctx.Done()
		remove()
		return nil
	}))
}
