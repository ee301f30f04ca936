// Package secretwatch watches, by name, the Secrets that Watchword depends
// on but does not label: the credentials of stores (tokens, AppRole secret
// IDs, CA bundles, client certificates) and the targets of creationPolicy
// Merge. Each gets one metadata-only watch selected by its name, so
// Watchword holds neither the contents nor the metadata of any other
// Secret in the cluster, however many there are, and still notices a
// rotated credential or a changed target at once. (Targets that Watchword
// owns carry its label and are watched by that label instead.)
//
// Tuning (with the operator's label-selected cache of Secrets): with 50,000
// unrelated Secrets the controller held 49 MiB before a sync instead of 119,
// and peaked at 139 MiB instead of 272 (FINDINGS.md, "Memory"). It stays for
// its other reason too: Watchword learns nothing of Secrets it does not use.
//
// A PushSecret with secretSelector names no Secret but a label selector:
// each such selector gets one metadata-only watch of its namespace that
// the API server filters by those labels, so only the Secrets that match
// are ever seen, and one that stops matching is seen to go.
package secretwatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/provider"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// DefaultSyncTimeout bounds the wait for a new watch's first list.
const DefaultSyncTimeout = 30 * time.Second

// Referenced lists every Secret that still needs watching.
type Referenced func(ctx context.Context) (map[provider.NamespacedName]bool, error)

// Selection is a label selector over the Secrets of one namespace; the
// selector is in its canonical string form (labels.Selector.String).
type Selection struct {
	Namespace string
	Selector  string
}

// ReferencedSelections lists every selection that still needs watching.
type ReferencedSelections func(ctx context.Context) (map[Selection]bool, error)

// Watch keeps the watches. Its zero value is not usable; call New.
type Watch struct {
	// SyncTimeout bounds the wait for a new watch's first list; after it,
	// asking for that Secret fails at once until the list succeeds (for
	// example once RBAC allows it). Set it before use.
	SyncTimeout time.Duration

	// Selections, when set, lists the selections that Sweep keeps
	// watching; without it Sweep stops none. Set it before use.
	Selections ReferencedSelections

	client     metadata.Interface
	referenced Referenced

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	watches  map[provider.NamespacedName]*watched
	selected map[Selection]*watched
	subs     []chan event.GenericEvent
}

type watched struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	// syncBy is when the first list must have succeeded; callers after
	// it fail at once instead of each waiting again.
	syncBy time.Time

	mu      sync.Mutex
	lastErr error
}

func (e *watched) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastErr
}

// New returns a Watch. Sweep consults referenced to stop the watches of
// Secrets that nothing uses any more.
func New(c metadata.Interface, referenced Referenced) *Watch {
	ctx, cancel := context.WithCancel(context.Background())
	return &Watch{SyncTimeout: DefaultSyncTimeout, client: c, referenced: referenced, ctx: ctx, cancel: cancel,
		watches: map[provider.NamespacedName]*watched{}, selected: map[Selection]*watched{}}
}

// Subscribe returns a channel that receives an event whenever a watched
// Secret is created, changed or deleted; the event's object carries the
// Secret's name, namespace and new resourceVersion (empty once deleted).
// Subscribe before Start.
func (w *Watch) Subscribe() <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 256)
	w.mu.Lock()
	w.subs = append(w.subs, ch)
	w.mu.Unlock()
	return ch
}

// Start stops every watch when ctx ends. It implements the manager's
// Runnable.
func (w *Watch) Start(ctx context.Context) error {
	<-ctx.Done()
	w.cancel()
	return nil
}

// Sweep stops the watches of Secrets that nothing names any more; run it
// periodically.
func (w *Watch) Sweep(ctx context.Context) {
	if refs, err := w.referenced(ctx); err == nil {
		w.retain(refs)
	}
	if w.Selections == nil {
		return
	}
	if sels, err := w.Selections(ctx); err == nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		for sel, e := range w.selected {
			if !sels[sel] {
				e.stop()
				delete(w.selected, sel)
			}
		}
	}
}

// retain stops the watches of Secrets not in keep.
func (w *Watch) retain(keep map[provider.NamespacedName]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ref, e := range w.watches {
		if !keep[ref] {
			e.stop()
			delete(w.watches, ref)
		}
	}
}

// Watched reports how many Secrets are watched.
func (w *Watch) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches) + len(w.selected)
}

// ResourceVersion returns the Secret's resourceVersion, starting a watch on
// it the first time it is asked for and waiting for the watch's first list;
// found is false when no such Secret exists. Only metadata is read.
func (w *Watch) ResourceVersion(ctx context.Context, ref provider.NamespacedName) (rv string, found bool, err error) {
	e := w.ensure(ref)
	if err = w.synced(ctx, e, fmt.Sprintf("Secret %q", ref.String())); err != nil {
		return "", false, err
	}
	obj, exists, err := e.informer.GetStore().GetByKey(ref.Namespace + "/" + ref.Name)
	if err != nil || !exists {
		return "", false, err
	}
	return obj.(*metav1.PartialObjectMetadata).ResourceVersion, true, nil
}

// Matching returns the names, sorted, of the Secrets of namespace ns whose
// labels match sel, starting a watch of that selection the first time it
// is asked for and waiting for the watch's first list. Only the metadata
// of matching Secrets is read; a Secret that starts or stops matching is
// told to the subscribers like a change of a Secret watched by name.
func (w *Watch) Matching(ctx context.Context, ns string, sel labels.Selector) ([]string, error) {
	key := Selection{Namespace: ns, Selector: sel.String()}
	e := w.ensureSelected(key)
	if err := w.synced(ctx, e, fmt.Sprintf("the Secrets of namespace %q labelled %s", ns, key.Selector)); err != nil {
		return nil, err
	}
	var out []string
	for _, obj := range e.informer.GetStore().List() {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Namespace == ns {
			out = append(out, m.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// synced waits for a watch's first list, until its syncBy.
func (w *Watch) synced(ctx context.Context, e *watched, what string) error {
	if e.informer.HasSynced() {
		return nil
	}
	waitCtx, cancel := context.WithDeadline(ctx, e.syncBy)
	defer cancel()
	if cache.WaitForCacheSync(waitCtx.Done(), e.informer.HasSynced) {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := "it did not start within " + w.SyncTimeout.String()
	if err := e.err(); err != nil {
		cause = err.Error()
	}
	return fmt.Errorf("%w: cannot watch %s: %s", engine.ErrUnavailable, what, cause)
}

func (w *Watch) ensure(ref provider.NamespacedName) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.watches[ref]; e != nil {
		return e
	}
	byName := fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	e := w.start(ref.Namespace, func(o *metav1.ListOptions) { o.FieldSelector = byName })
	w.watches[ref] = e
	return e
}

func (w *Watch) ensureSelected(key Selection) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.selected[key]; e != nil {
		return e
	}
	e := w.start(key.Namespace, func(o *metav1.ListOptions) { o.LabelSelector = key.Selector })
	w.selected[key] = e
	return e
}

// start runs a metadata-only informer of the Secrets of ns that selector
// picks, telling the subscribers of every change after its first list.
// Called with w.mu held.
func (w *Watch) start(ns string, selector func(*metav1.ListOptions)) *watched {
	ctx, stop := context.WithCancel(w.ctx)
	inf := Informer(w.client, ns, selector)
	_ = inf.SetTransform(slim)
	e := &watched{informer: inf, stop: stop, syncBy: time.Now().Add(w.SyncTimeout)}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		// Kept for the message of ResourceVersion; the informer retries
		// with backoff by itself.
		e.mu.Lock()
		e.lastErr = err
		e.mu.Unlock()
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				w.notify(ctx, obj)
			}
		},
		UpdateFunc: func(old, obj any) {
			if old.(*metav1.PartialObjectMetadata).ResourceVersion != obj.(*metav1.PartialObjectMetadata).ResourceVersion {
				w.notify(ctx, obj)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				gone := *m
				gone.ResourceVersion = ""
				w.notify(ctx, &gone)
			}
		},
	})
	go inf.RunWithContext(ctx)
	return e
}

// notify tells every subscriber which Secret changed.
func (w *Watch) notify(ctx context.Context, obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	changed := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, ResourceVersion: m.ResourceVersion}}
	w.mu.Lock()
	subs := w.subs
	w.mu.Unlock()
	for _, ch := range subs {
		select {
		case ch <- event.GenericEvent{Object: changed}:
		case <-ctx.Done():
			return
		}
	}
}

// slim keeps a watched Secret's name, namespace and resourceVersion only.
func slim(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta}
	out.Name, out.Namespace, out.ResourceVersion = m.Name, m.Namespace, m.ResourceVersion
	return out, nil
}

// Informer returns an informer of the metadata of the Secrets of namespace
// ns (all namespaces if empty) that select picks, by setting a field or
// label selector.
func Informer(c metadata.Interface, ns string, selector func(*metav1.ListOptions)) cache.SharedIndexInformer {
	res := c.Resource(secrets).Namespace(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			selector(&o)
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			selector(&o)
			return res.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
}
