package kubernetes

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/watchword-dev/watchword/internal/engine"
)

func secretMeta(name, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: name, ResourceVersion: rv}}
}

// The API server stands in for a fake here, to inject what a real one
// does only by chance: a watch whose resourceVersion is too old (410).
func TestWatchRelistsAfterAnExpiredVersion(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	lists := 0
	mc.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		l := &metav1.List{}
		l.ResourceVersion = []string{"", "10", "20"}[min(lists, 2)]
		return true, l, nil
	})
	var mu sync.Mutex
	var fromVersions []string
	mc.PrependWatchReactor("secrets", func(a k8stesting.Action) (bool, watch.Interface, error) {
		rv := a.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion
		mu.Lock()
		fromVersions = append(fromVersions, rv)
		mu.Unlock()
		w := watch.NewFakeWithChanSize(4, false)
		switch rv {
		case "10":
			w.Modify(secretMeta("db", "11"))
			w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		case "20":
			w.Add(secretMeta("api", "21"))
		}
		return true, w, nil
	})
	w := newWatcher(mc, "shared", &identity{known: "the test"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got [][]string
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, func(keys []string) {
			mu.Lock()
			got = append(got, keys)
			n := len(got)
			mu.Unlock()
			if n == 4 {
				cancel()
			}
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch returned %v, want the context's end", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not report four changes")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || got[0] != nil || strings.Join(got[1], ",") != "db" || got[2] != nil || strings.Join(got[3], ",") != "api" {
		t.Fatalf("changes %q, want nil (in place), db, then nil (relisted after 410), then api", got)
	}
	if len(fromVersions) < 2 || fromVersions[0] != "10" || fromVersions[len(fromVersions)-1] != "20" {
		t.Fatalf("watched from %v, want 10, then 20 after the relist", fromVersions)
	}
}

func TestWatchWithoutListRightsIsPermissionDenied(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	mc.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New(sentinel))
	})
	w := newWatcher(mc, "shared", &identity{known: `service account "team/reader"`})
	err := w.Watch(context.Background(), func([]string) { t.Error("a refused watch told of a change") })
	if !errors.Is(err, engine.ErrPermissionDenied) {
		t.Fatalf("error %v, want ErrPermissionDenied", err)
	}
	if msg := err.Error(); strings.Contains(msg, sentinel) || !strings.Contains(msg, `service account "team/reader"`) || !strings.Contains(msg, "list and watch") {
		t.Fatalf("message %q: want the identity and the verbs needed, and none of the server's text", msg)
	}
}

// Every Watch, the first one too, tells that anything may have changed
// once it has listed: what changed before it is not known.
func TestEveryWatchReportsAGapAtItsStart(t *testing.T) {
	mc := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	mc.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		l := &metav1.List{}
		l.ResourceVersion = "5"
		return true, l, nil
	})
	mc.PrependWatchReactor("secrets", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFakeWithChanSize(1, false), nil
	})
	w := newWatcher(mc, "shared", &identity{known: "the test"})
	for i, wantGap := range []bool{true, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		gap := false
		_ = w.Watch(ctx, func(keys []string) { gap = gap || keys == nil })
		cancel()
		if gap != wantGap {
			t.Fatalf("watch %d: gap reported %v, want %v", i+1, gap, wantGap)
		}
	}
}
