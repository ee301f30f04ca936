package restart

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/internal/engine"
)

// watchedObjects watches, by name and metadata only, the ConfigMaps and
// Secrets that opted-in workloads reload for (reload.go), and wakes those
// workloads when one changes. An object no workload names is not
// watched: there is one watch per object named, started when the first
// workload names it and stopped when the last one no longer does. Of an
// object it keeps its resourceVersion and, per way of using it, the
// digest of the keys used at that version; never a value. A digest is
// computed from a GET of that one object, when its resourceVersion is
// not the one the digest was computed at.
type watchedObjects struct {
	ctx  context.Context
	meta metadata.Interface
	// reader reads the objects from the API server (the client's cache
	// holds no ConfigMap or Secret data).
	reader client.Reader
	// keys make the digests (Digest).
	keys *engine.DigestKeys
	// changed is called with the workloads that name an object that has
	// just changed.
	changed func([]Ref)

	mu    sync.Mutex
	objs  map[watchKey]*watchedObject
	users map[Ref][]watchKey
}

// watchKey is an object in its namespace.
type watchKey struct {
	Object
	Namespace string
}

type watchedObject struct {
	cancel context.CancelFunc
	users  map[Ref]bool
	// rv is the resourceVersion the watch last reported; "" before it
	// did.
	rv string
	// digests by usageKey, with the resourceVersion they were computed at.
	digests map[string][2]string
}

var objectResources = map[string]schema.GroupVersionResource{
	KindSecret:    {Version: "v1", Resource: "secrets"},
	KindConfigMap: {Version: "v1", Resource: "configmaps"},
}

func newWatchedObjects(ctx context.Context, meta metadata.Interface, reader client.Reader, keys *engine.DigestKeys, changed func([]Ref)) *watchedObjects {
	return &watchedObjects{ctx: ctx, meta: meta, reader: reader, keys: keys, changed: changed,
		objs: map[watchKey]*watchedObject{}, users: map[Ref][]watchKey{}}
}

// track says which objects ref names now: watches start for the new ones
// and stop for those nobody names any more.
func (w *watchedObjects) track(ref Ref, objs []Object) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]watchKey, 0, len(objs))
	for _, o := range objs {
		k := watchKey{o, ref.Namespace}
		keys = append(keys, k)
		e := w.objs[k]
		if e == nil {
			ctx, cancel := context.WithCancel(w.ctx)
			e = &watchedObject{cancel: cancel, users: map[Ref]bool{}, digests: map[string][2]string{}}
			w.objs[k] = e
			go w.watch(ctx, k)
		}
		e.users[ref] = true
	}
	for _, k := range w.users[ref] {
		if e := w.objs[k]; e != nil && !containsKey(keys, k) {
			delete(e.users, ref)
			if len(e.users) == 0 {
				e.cancel()
				delete(w.objs, k)
			}
		}
	}
	if len(keys) == 0 {
		delete(w.users, ref)
		return
	}
	w.users[ref] = keys
}

func containsKey(keys []watchKey, k watchKey) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// digest is the digest of the keys of the object that u uses, from the
// memory when the object has not changed since, else from a GET.
func (w *watchedObjects) digest(ctx context.Context, ns string, o Object, u Usage) (string, error) {
	k, uk := watchKey{o, ns}, usageKey(u)
	w.mu.Lock()
	e := w.objs[k]
	if e != nil && e.rv != "" && e.digests[uk][0] == e.rv {
		d := e.digests[uk][1]
		w.mu.Unlock()
		return d, nil
	}
	w.mu.Unlock()
	d, rv, err := readDigest(ctx, w.reader, w.keys, ns, o, u)
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	if e := w.objs[k]; e != nil {
		e.digests[uk] = [2]string{rv, d}
	}
	w.mu.Unlock()
	return d, nil
}

// readDigest reads one object and digests the keys u uses; an object
// that does not exist has the digest absent.
func readDigest(ctx context.Context, reader client.Reader, keys *engine.DigestKeys, ns string, o Object, u Usage) (digest, rv string, err error) {
	key := client.ObjectKey{Namespace: ns, Name: o.Name}
	var data map[string][]byte
	switch o.Kind {
	case KindConfigMap:
		var cm corev1.ConfigMap
		if err = reader.Get(ctx, key, &cm); err == nil {
			data = make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				data[k] = v
			}
			rv = cm.ResourceVersion
		}
	default:
		var s corev1.Secret
		if err = reader.Get(ctx, key, &s); err == nil {
			data, rv = s.Data, s.ResourceVersion
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return absent, gone, nil
	case err != nil:
		return "", "", fmt.Errorf("reading %s %s/%s: %w", o.Kind, ns, o.Name, err)
	}
	return Digest(keys, data, u), rv, nil
}

// observed records the resourceVersion the watch reports for k, and
// wakes its workloads when it moved.
func (w *watchedObjects) observed(k watchKey, rv string) {
	w.mu.Lock()
	e := w.objs[k]
	if e == nil || e.rv == rv {
		w.mu.Unlock()
		return
	}
	// The first version the watch reports is news only when a digest
	// was computed at another one (the object changed in between).
	news := e.rv != ""
	for _, d := range e.digests {
		news = news || d[0] != rv
	}
	e.rv = rv
	refs := make([]Ref, 0, len(e.users))
	for r := range e.users {
		refs = append(refs, r)
	}
	w.mu.Unlock()
	if news {
		w.changed(refs)
	}
}

// gone is the resourceVersion recorded for an object that does not
// exist.
const gone = "gone"

// watch lists k by name and watches it from that list; a broken watch or
// a refused list is tried again with backoff (1 s doubling to 1 min).
// The first list only records the version (the workloads that named the
// object are reconciled already); every change after it wakes them.
func (w *watchedObjects) watch(ctx context.Context, k watchKey) {
	byName := fields.OneTermEqualSelector("metadata.name", k.Name).String()
	res := w.meta.Resource(objectResources[k.Kind]).Namespace(k.Namespace)
	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 7, Cap: time.Minute}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		list, err := res.List(ctx, metav1.ListOptions{FieldSelector: byName})
		if err == nil {
			rv := gone
			if len(list.Items) > 0 {
				rv = list.Items[0].ResourceVersion
			}
			w.observed(k, rv)
			var wi watch.Interface
			if wi, err = res.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: list.ResourceVersion}); err == nil {
				started := time.Now()
				w.follow(ctx, k, wi)
				// A watch that ran a while ended as watches do (the API
				// server's timeout): listed again at once. One that ended
				// soon after it began (an Error event, a 410) backs off,
				// so that a watch that cannot hold is no tight loop.
				if time.Since(started) > minWatchLife {
					backoff = newBackoff()
					continue
				}
				err = errors.New("the watch ended at once")
			}
		}
		ctrl.LoggerFrom(ctx).V(1).Info("watching a ConfigMap or Secret a workload reloads for", "kind", k.Kind, "namespace", k.Namespace, "name", k.Name, "error", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Step()):
		}
	}
}

// minWatchLife is how long a watch must have run for its end to be taken
// as the usual end of a watch, listed again at once.
const minWatchLife = 10 * time.Second

// follow reports the versions wi brings until it ends.
func (w *watchedObjects) follow(ctx context.Context, k watchKey, wi watch.Interface) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			m, isMeta := ev.Object.(*metav1.PartialObjectMetadata)
			switch {
			case !isMeta:
			case ev.Type == watch.Deleted:
				w.observed(k, gone)
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				w.observed(k, m.ResourceVersion)
			}
		}
	}
}
