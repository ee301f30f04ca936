package kubernetes

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/watchword-dev/watchword/internal/engine"
)

// secretsResource is the resource the watch lists and watches.
var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Watcher tells of changes to the Secrets of one namespace (CanWatch): the
// name of each Secret created, changed or deleted. It watches their
// metadata only (the API server sends PartialObjectMetadata, never data),
// so it needs the verbs list and watch on secrets in that namespace and no
// more. It keeps nothing of what it sees.
type Watcher struct {
	secrets   metadata.ResourceInterface
	namespace string
	who       *identity
}

func newWatcher(mc metadata.Interface, namespace string, who *identity) *Watcher {
	return &Watcher{secrets: mc.Resource(secretsResource).Namespace(namespace), namespace: namespace, who: who}
}

// Watch follows the namespace's Secrets until ctx ends or the watch
// breaks. It lists the namespace (one item: only the list's
// resourceVersion is needed) and watches from that version, so that every
// change after the list is told; once the list is made it calls
// changed(nil), since what changed before it is not known. A dropped
// connection is resumed from the last resourceVersion seen, by client-go's
// RetryWatcher, without a gap. When the API server no longer has that
// version (410 Gone, "resourceVersion too old"), the namespace is listed
// again and changed(nil) tells that anything may have changed.
func (w *Watcher) Watch(ctx context.Context, changed func(keys []string)) error {
	rv, err := w.currentVersion(ctx)
	if err != nil {
		return err
	}
	changed(nil)
	for {
		expired, err := w.follow(ctx, rv, changed)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !expired {
			return err
		}
		if rv, err = w.currentVersion(ctx); err != nil {
			return err
		}
		changed(nil)
	}
}

// currentVersion is the resourceVersion of a list of the namespace's
// Secrets: where a watch starts.
func (w *Watcher) currentVersion(ctx context.Context) (string, error) {
	l, err := w.secrets.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", w.classify(ctx, "list", err)
	}
	return l.ResourceVersion, nil
}

// follow watches from rv and reports changed Secrets until the watch ends;
// expired tells that rv is too old and the namespace must be listed again.
func (w *Watcher) follow(ctx context.Context, rv string, changed func(keys []string)) (expired bool, err error) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return w.secrets.Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return false, fmt.Errorf("watching Secrets in namespace %s: %w", w.namespace, engine.ErrUnavailable)
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-rw.Done():
			return false, fmt.Errorf("the watch of Secrets in namespace %s ended: %w", w.namespace, engine.ErrUnavailable)
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return false, fmt.Errorf("the watch of Secrets in namespace %s ended: %w", w.namespace, engine.ErrUnavailable)
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ok {
					changed([]string{m.Name})
				}
			case watch.Error:
				status := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(status) || apierrors.IsGone(status) || codeOf(status) == http.StatusGone {
					return true, nil
				}
				return false, w.classify(ctx, "watch", status)
			}
		}
	}
}

func codeOf(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

// classify turns an error of a list or watch of the namespace's Secrets
// into an engine error class, as classify does for reads: a refusal names
// the identity and the request, never the API server's text.
func (w *Watcher) classify(ctx context.Context, verb string, err error) error {
	request := fmt.Sprintf(`%s Secrets in namespace %q (verb %q, resource "secrets", API group "")`, verb, w.namespace, verb)
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the API server does not let %s %s; to have changes watched, a Role bound to it must allow list and watch on secrets there (reads still work, by polling): %w",
			w.who.describe(ctx, nil), request, engine.ErrPermissionDenied)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the store's credentials were rejected by the API server (%s): %w", w.who.describe(ctx, nil), engine.ErrPermissionDenied)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("%s Secrets in namespace %s: %w", verb, w.namespace, engine.ErrThrottled)
	default:
		return fmt.Errorf("%s Secrets in namespace %s: %v: %w", verb, w.namespace, apiReason(err), engine.ErrUnavailable)
	}
}
