package conformance

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// streamStore adds a batch read and a watch to a memStore, with flaws of
// their own.
type streamStore struct {
	*memStore
	batchReversed bool // items come in the reverse order of the refs
	watchSilent   bool // the watch never announces anything

	wmu      sync.Mutex
	watchers []chan string
}

func (s *streamStore) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	out := make([]engine.BatchItem, len(refs))
	for i, r := range refs {
		out[i].Object, out[i].Err = s.GetSecret(ctx, r)
	}
	if s.batchReversed {
		slices.Reverse(out)
	}
	return out, nil
}

func (s *streamStore) PutSecret(ctx context.Context, key string, p engine.Publication, owner engine.Owner) (string, error) {
	v, err := s.memStore.PutSecret(ctx, key, p, owner)
	if err == nil && !s.watchSilent {
		s.wmu.Lock()
		for _, w := range s.watchers {
			select {
			case w <- key:
			default:
			}
		}
		s.wmu.Unlock()
	}
	return v, err
}

func (s *streamStore) Watch(ctx context.Context, changed func([]string)) error {
	w := make(chan string, 16)
	s.wmu.Lock()
	s.watchers = append(s.watchers, w)
	s.wmu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case k := <-w:
			changed([]string{k})
		}
	}
}

func (s *streamStore) harness() Harness {
	h := s.memStore.harness()
	h.Ops.Writer, h.Ops.Batch, h.Ops.Watcher = s, s, s
	h.WatchTimeout = 3 * time.Second
	return h
}

func TestAStoreThatBatchesAndWatchesPasses(t *testing.T) {
	Run(t, (&streamStore{memStore: newMemStore(flaws{})}).harness())
}

func TestFlawedBatchAndWatchFail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store *streamStore
		want  string
	}{
		{"batch out of order", &streamStore{memStore: newMemStore(flaws{}), batchReversed: true},
			`BatchReadsEqualSingleReads: store "memory": ref 1 of a batch read (key "batch-missing"): expected an error of class ErrNotFound as a single read returns, the batch returned an object`},
		{"watch that announces nothing", &streamStore{memStore: newMemStore(flaws{}), watchSilent: true},
			`WatchAnnouncesWrites: store "memory": key "watch" was written 3 times, and the watch did not announce it within 3s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := runRecorded(t, tc.store.harness())
			if !containsPrefix(rec.failures, tc.want) {
				t.Errorf("no failure says %q; the failures:\n%s", tc.want, strings.Join(rec.failures, "\n"))
			}
		})
	}
}

func TestStreamChecksSkipWithoutTheCapability(t *testing.T) {
	rec := runRecorded(t, newMemStore(flaws{}).harness())
	for _, name := range []string{"BatchReadsEqualSingleReads", "WatchAnnouncesWrites"} {
		if !rec.skipped[name] {
			t.Errorf("check %s ran against a store that does not declare its capability", name)
		}
	}
}
