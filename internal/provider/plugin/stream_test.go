package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	sdk "github.com/watchword-dev/watchword/pkg/plugin"
)

// batchStore reads "a" and "b"; any other key does not exist, and "mine"
// belongs to someone else. It counts its batch calls.
type batchStore struct{ batches chan []sdk.Ref }

func (batchStore) Get(_ context.Context, _ sdk.Config, ref sdk.Ref) (sdk.Secret, error) {
	switch ref.Key {
	case "a", "b":
		return sdk.Secret{Version: "1", Fields: map[string][]byte{"k": []byte("v-" + ref.Key)}}, nil
	case "throttled":
		return sdk.Secret{}, sdk.Throttled(time.Second, "key %q: slow down", ref.Key)
	}
	return sdk.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, sdk.ErrNotFound)
}

func (s batchStore) GetBatch(ctx context.Context, cfg sdk.Config, refs []sdk.Ref) ([]sdk.BatchResult, error) {
	s.batches <- refs
	out := make([]sdk.BatchResult, len(refs))
	for i, r := range refs {
		out[i].Secret, out[i].Err = s.Get(ctx, cfg, r)
	}
	return out, nil
}

func dial(t *testing.T, endpoint string) engine.Ops {
	t.Helper()
	ops, err := Dial(context.Background(), endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ops.Closer.Close() })
	return ops
}

func TestBatchAndWatchOnlyWhenAnnounced(t *testing.T) {
	ops := dial(t, serve(t, sdk.Store{Name: "ro", Reader: batchStore{}}))
	if ops.Batch != nil || ops.Watcher != nil || ops.Capabilities() != engine.CanRead {
		t.Fatalf("a plugin without batch and watch: capabilities %s", ops.Capabilities())
	}
	ops = dial(t, serve(t, sdk.Store{Name: "full", Reader: batchStore{}, Batch: batchStore{}, Watcher: &chanWatcher{}}))
	if want := engine.CanRead | engine.CanBatchRead | engine.CanWatch; ops.Capabilities() != want {
		t.Fatalf("capabilities %s, want %s", ops.Capabilities(), want)
	}
}

func TestBatchReadKeepsOrderAndPerItemErrors(t *testing.T) {
	s := batchStore{batches: make(chan []sdk.Ref, 10)}
	ops := dial(t, serve(t, sdk.Store{Name: "batch", Reader: s, Batch: s}))
	refs := []engine.Ref{{Key: "b"}, {Key: "gone"}, {Key: "a"}, {Key: "throttled"}}
	items, err := ops.Batch.GetSecrets(context.Background(), refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.batches) != 1 {
		t.Fatalf("%d BatchGet calls for one batch, want 1", len(s.batches))
	}
	if got := string(items[0].Object.Fields["k"]); items[0].Err != nil || got != "v-b" {
		t.Errorf("item 0 (b): %q, %v", got, items[0].Err)
	}
	if got := string(items[2].Object.Fields["k"]); items[2].Err != nil || got != "v-a" {
		t.Errorf("item 2 (a): %q, %v", got, items[2].Err)
	}
	if !errors.Is(items[1].Err, engine.ErrNotFound) {
		t.Errorf("item 1 (gone): %v, want ErrNotFound", items[1].Err)
	}
	if !errors.Is(items[3].Err, engine.ErrThrottled) {
		t.Errorf("item 3 (throttled): %v, want ErrThrottled", items[3].Err)
	}
}

func TestBatchReadSplitsLargeBatches(t *testing.T) {
	s := batchStore{batches: make(chan []sdk.Ref, 10)}
	ops := dial(t, serve(t, sdk.Store{Name: "batch", Reader: s, Batch: s}))
	refs := make([]engine.Ref, sdk.MaxBatchRefs+1)
	for i := range refs {
		refs[i] = engine.Ref{Key: "a"}
	}
	items, err := ops.Batch.GetSecrets(context.Background(), refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(refs) || len(s.batches) != 2 {
		t.Fatalf("%d items in %d calls, want %d in 2", len(items), len(s.batches), len(refs))
	}
}

// chanWatcher announces the keys sent on keys; a non-nil err on fail ends
// the watch with that error.
type chanWatcher struct {
	keys chan string
	fail chan error
}

func (w *chanWatcher) Watch(ctx context.Context, _ sdk.Config, _ []string, feed sdk.Feed) error {
	if err := feed.Ready(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.fail:
			return err
		case k := <-w.keys:
			if err := feed.Changed(k); err != nil {
				return err
			}
		}
	}
}

// watch runs ops.Watcher.Watch until it returns, sending every callback's
// keys on the returned channel ("*" for nil) and its error on done.
func watch(ctx context.Context, ops engine.Ops) (<-chan string, <-chan error) {
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- ops.Watcher.Watch(ctx, func(keys []string) {
			if keys == nil {
				got <- "*"
				return
			}
			for _, k := range keys {
				got <- k
			}
		})
	}()
	return got, done
}

func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case k := <-got:
		return k
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced within 10s")
		return ""
	}
}

// TestWatchAnnouncesKeysAndAGapAtEveryStart: every watch, the first one
// too, starts with changed(nil) once the plugin says it is in place: what
// changed before it is not known.
func TestWatchAnnouncesKeysAndAGapAtEveryStart(t *testing.T) {
	w := &chanWatcher{keys: make(chan string), fail: make(chan error, 1)}
	ops := dial(t, serve(t, sdk.Store{Name: "watch", Reader: batchStore{}, Watcher: w}))

	ctx, cancel := context.WithCancel(context.Background())
	got, done := watch(ctx, ops)
	if k := next(t, got); k != "*" {
		t.Fatalf("the first callback of the first watch: %q, want changed(nil)", k)
	}
	w.keys <- "db"
	w.keys <- "api"
	if a, b := next(t, got), next(t, got); a != "db" || b != "api" {
		t.Fatalf("announced %q, %q; want db, api", a, b)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a watch whose context ended returned %v, want context.Canceled", err)
	}

	// The plugin's watch breaks: Watch returns an error of a class the
	// caller retries.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	got, done = watch(ctx, ops)
	if k := next(t, got); k != "*" {
		t.Fatalf("the first callback of a second watch: %q, want changed(nil)", k)
	}
	w.fail <- fmt.Errorf("the store's feed broke: %w", sdk.ErrUnavailable)
	if err := <-done; !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("a broken watch returned %v, want ErrUnavailable", err)
	}

	got, done = watch(ctx, ops)
	w.keys <- "db"
	if a, b := next(t, got), next(t, got); !slices.Equal([]string{a, b}, []string{"*", "db"}) {
		t.Fatalf("after a reconnect: %q, %q; want changed(nil) then db", a, b)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a watch whose context ended returned %v, want context.Canceled", err)
	}
}

func TestWatchOfAPluginWithoutWatchIsNotSupported(t *testing.T) {
	// A client that dials a plugin announcing watch but whose server lacks
	// it cannot happen through the SDK; a store without a Watcher answers
	// UNIMPLEMENTED, which maps to ErrNotSupported.
	ops := dial(t, serve(t, sdk.Store{Name: "ro", Reader: batchStore{}}))
	c := ops.Reader.(*Client)
	err := (&watcher{c: c}).Watch(context.Background(), func([]string) { t.Error("a change announced by a plugin that cannot watch") })
	if !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("watching a plugin without watch: %v, want ErrNotSupported", err)
	}
}
