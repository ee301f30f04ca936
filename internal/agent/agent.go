package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/failure"
	"github.com/watchword-dev/watchword/internal/provider"
)

// Backoff after a failed refresh: from minBackoff, doubling, up to the
// refresh interval.
const minBackoff = 5 * time.Second

// Options are what the agent is built from besides its config.
type Options struct {
	Registry provider.Registry
	Log      logr.Logger
	// Kube reads ExternalSecrets and stores in Kubernetes mode; Local is
	// the cluster's address for providers that need it. Both nil outside
	// Kubernetes.
	Kube  client.Reader
	Local *rest.Config
	// Metrics, when set, receives the agent's metrics.
	Metrics *Metrics
}

// Agent delivers the config's files and keeps them fresh.
type Agent struct {
	cfg     *Config
	opts    Options
	fetcher *engine.Fetcher
	deps    *fileDeps
	metrics *Metrics

	mu      sync.Mutex
	clients map[string]*engine.Client // by store ID
	targets []*target
	ready   bool
}

// target is one directory: where its spec comes from, how its files are
// written, and what was last delivered.
type target struct {
	dir      string
	writer   *AtomicWriter
	mode     os.FileMode
	uid, gid int
	onChange *Action
	// source computes the spec and the store of each refresh.
	source func(ctx context.Context) (*v1alpha1.ExternalSecretSpec, provider.Store, string, error)

	delivered bool
	versions  []v1alpha1.RemoteVersion
}

// New builds an agent. Nothing is read or written yet.
func New(cfg *Config, opts Options) (*Agent, error) {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	a := &Agent{cfg: cfg, opts: opts, metrics: opts.Metrics, clients: map[string]*engine.Client{},
		deps: &fileDeps{creds: cfg.Credentials, tokenFile: cfg.ServiceAccountTokenFile, local: opts.Local}}
	// One Fetcher for every target: an object that several directories
	// share is read once per refresh.
	a.fetcher = engine.NewFetcher(nil, func(store string, n int) { a.metrics.reads.WithLabelValues(storeLabel(store)).Add(float64(n)) })
	stores := map[string]*Store{}
	for i := range cfg.Stores {
		stores[cfg.Stores[i].Name] = &cfg.Stores[i]
	}
	for _, d := range cfg.Deliveries {
		t, err := newTarget(d.Directory, d.Mode, d.Owner, d.Group, d.OnChange)
		if err != nil {
			return nil, err
		}
		s := stores[d.Store]
		spec := deliverySpec(d)
		store := provider.Store{Kind: "AgentStore", Name: s.Name, Spec: &s.SecretStoreProvider}
		t.source = func(context.Context) (*v1alpha1.ExternalSecretSpec, provider.Store, string, error) {
			return spec, store, "config/" + s.Name, nil
		}
		a.targets = append(a.targets, t)
	}
	if k := cfg.Kubernetes; k != nil {
		if opts.Kube == nil {
			return nil, errors.New("kubernetes: the agent is not running in a cluster and was given no kubeconfig")
		}
		for _, e := range k.ExternalSecrets {
			t, err := newTarget(e.Directory, e.Mode, e.Owner, e.Group, e.OnChange)
			if err != nil {
				return nil, err
			}
			t.source = a.followed(k.Namespace, e.Name)
			a.targets = append(a.targets, t)
		}
	}
	return a, nil
}

func newTarget(dir, mode, owner, group string, onChange *Action) (*target, error) {
	m, err := parseMode(mode)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	uid, gid, err := ids(owner, group)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	return &target{dir: dir, writer: NewAtomicWriter(dir), mode: m, uid: uid, gid: gid, onChange: onChange}, nil
}

// deliverySpec is the ExternalSecret spec a delivery stands for: each file
// a data entry, the template the target's template. The engine computes
// it as it computes an ExternalSecret's Secret.
func deliverySpec(d Delivery) *v1alpha1.ExternalSecretSpec {
	spec := &v1alpha1.ExternalSecretSpec{}
	for _, f := range d.Files {
		spec.Data = append(spec.Data, v1alpha1.ExternalSecretData{SecretKey: f.Name, RemoteRef: f.RemoteRef})
	}
	if t := d.Template; t != nil {
		spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: t.Data, MergePolicy: t.MergePolicy}
	}
	return spec
}

// storeLabel is a store's name for metrics: its ID without what follows
// @ (the UID and generation of a store of the cluster).
func storeLabel(id string) string {
	if i := strings.LastIndexByte(id, '@'); i > 0 {
		return id[:i]
	}
	return id
}

// client returns the store's provider client, built once per store ID
// through the same registry as the controller's.
func (a *Agent) client(ctx context.Context, id string, store provider.Store) (*engine.Client, error) {
	a.mu.Lock()
	c := a.clients[id]
	a.mu.Unlock()
	if c != nil {
		return c, nil
	}
	name, ops, err := a.opts.Registry.Ops(ctx, store, a.deps)
	if err != nil {
		return nil, err
	}
	c, err = engine.NewClient(name, ops)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.clients[id]; old != nil {
		_ = c.Close()
		return old, nil
	}
	a.clients[id] = c
	// A client of an older generation of the same store is done with.
	for other, oc := range a.clients {
		if other != id && storeLabel(other) == storeLabel(id) {
			_ = oc.Close()
			delete(a.clients, other)
			a.fetcher.Forget(other)
		}
	}
	return c, nil
}

// computed is one target's new content, or why there is none.
type computed struct {
	t   *target
	res *engine.Result
	err error
}

// compute reads and renders every target, in parallel; an object that
// several targets share is read once (the shared Fetcher, maxAge).
func (a *Agent) compute(ctx context.Context, maxAge time.Duration) []computed {
	out := make([]computed, len(a.targets))
	var g errgroup.Group
	g.SetLimit(8)
	for i, t := range a.targets {
		g.Go(func() error {
			out[i] = computed{t: t}
			spec, store, id, err := t.source(ctx)
			if err == nil {
				var c *engine.Client
				if c, err = a.client(ctx, id, store); err == nil {
					out[i].res, err = a.fetcher.Sync(ctx, engine.Input{Spec: spec, Store: id, Reader: c, MaxAge: maxAge})
				}
			}
			if err != nil {
				out[i].err = fmt.Errorf("directory %s: %w", t.dir, failure.Redacted(err))
			}
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// Once computes every target and writes them only when all succeeded:
// for an init container, which must leave either every file or none.
func (a *Agent) Once(ctx context.Context) error {
	// Any read made during this one run is fresh enough for every
	// directory that shares its object.
	results := a.compute(ctx, a.cfg.RefreshInterval.Duration/2)
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, r := range results {
		if err := a.deliver(ctx, r.t, r.res, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Refresh computes every target and writes those that succeeded and
// changed. A target that failed keeps its last good files.
func (a *Agent) Refresh(ctx context.Context) error {
	// Reads made in this refresh serve every target; the next refresh,
	// at least 0.9 intervals later, checks versions again.
	results := a.compute(ctx, a.cfg.RefreshInterval.Duration/2)
	var errs []error
	for _, r := range results {
		err := r.err
		if err == nil {
			err = a.deliver(ctx, r.t, r.res, true)
		}
		if err != nil {
			a.metrics.errors.WithLabelValues(r.t.dir).Inc()
			a.opts.Log.Error(err, "refresh failed; the last good files stay", "directory", r.t.dir)
			errs = append(errs, err)
		}
	}
	a.mu.Lock()
	if len(errs) == 0 {
		a.ready = true
	}
	a.mu.Unlock()
	return errors.Join(errs...)
}

// deliver writes a target's files when they changed, then reports the
// change and runs the action.
func (a *Agent) deliver(ctx context.Context, t *target, res *engine.Result, act bool) error {
	first := !t.delivered
	existed := dataExists(t.dir)
	changed, err := t.writer.Write(Target{Files: res.Data, Mode: t.mode, UID: t.uid, GID: t.gid})
	if err != nil {
		return fmt.Errorf("directory %s: %w", t.dir, err)
	}
	t.delivered = true
	if !changed {
		t.versions = res.Versions
		return nil
	}
	a.metrics.changes.WithLabelValues(t.dir).Inc()
	a.metrics.setVersions(t.dir, t.versions, res.Versions)
	a.opts.Log.Info("files changed", "directory", t.dir, "files", slices.Sorted(maps.Keys(res.Data)),
		"versions", versionList(res.Versions), "previous", versionList(t.versions))
	t.versions = res.Versions
	// The first write into an empty directory has nothing to reload.
	if !act || t.onChange == nil || (first && !existed) {
		return nil
	}
	if err := t.onChange.Run(ctx); err != nil {
		a.metrics.actionErrors.WithLabelValues(t.dir).Inc()
		return fmt.Errorf("directory %s: the files changed, but %w", t.dir, err)
	}
	a.metrics.actions.WithLabelValues(t.dir).Inc()
	return nil
}

func dataExists(dir string) bool {
	_, err := os.Lstat(dir + "/" + dataLink)
	return err == nil
}

// versionList is "key@version" for each object read, for logs.
func versionList(vs []v1alpha1.RemoteVersion) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		s := v.Key
		if v.Version != "" {
			s += "@" + v.Version
		}
		out = append(out, s)
	}
	return out
}

// Ready reports whether a refresh has delivered every target.
func (a *Agent) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ready
}

// Run refreshes until ctx ends: every interval with ±10% jitter, and after
// a failure from 5 s doubling up to the interval.
func (a *Agent) Run(ctx context.Context) error {
	interval := a.cfg.RefreshInterval.Duration
	backoff := minBackoff
	for {
		wait := jitter(interval)
		if err := a.Refresh(ctx); err != nil {
			wait = min(backoff, interval)
			backoff = min(backoff*2, interval)
		} else {
			backoff = minBackoff
		}
		a.fetcher.Sweep(3 * interval)
		select {
		case <-ctx.Done():
			a.closeClients()
			return nil
		case <-time.After(wait):
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

func (a *Agent) closeClients() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, c := range a.clients {
		_ = c.Close()
		delete(a.clients, id)
	}
}
