package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
)

// batchReadsEqualSingleReads: a batch read returns, ref by ref and in the
// order of the refs, what single reads return: the same version and
// fields, or an error of the same class.
func (s *suite) batchReadsEqualSingleReads() {
	a, b, missing := s.key("batch-a"), s.key("batch-b"), s.key("batch-missing")
	s.seed(a, fields("batch-a"))
	s.seed(b, fields("batch-b"))
	refs := []engine.Ref{{Key: b}, {Key: missing}, {Key: a}}
	if v := s.mustGet(a, "", "after seeding it").Version; v != "" {
		refs = append(refs, engine.Ref{Key: a, Version: v}, engine.Ref{Key: a, Version: missingVersion})
	}
	ctx, cancel := s.ctx()
	defer cancel()
	items, err := s.h.Ops.Batch.GetSecrets(ctx, refs)
	if err != nil {
		s.t.Fatalf("store %q: a batch read of %d refs: expected it to succeed (a missing key is that ref's own error), the store returned: %v", s.h.Name, len(refs), err)
	}
	if len(items) != len(refs) {
		s.t.Fatalf("store %q: a batch read of %d refs: expected one item per ref, the store returned %d", s.h.Name, len(refs), len(items))
	}
	for i, ref := range refs {
		what := fmt.Sprintf("ref %d of a batch read (key %q%s)", i, ref.Key, versionText(ref.Version))
		single, serr := s.get(ref.Key, ref.Version)
		item := items[i]
		switch {
		case serr != nil && item.Err == nil:
			s.t.Errorf("store %q: %s: expected an error of class %s as a single read returns, the batch returned an object", s.h.Name, what, classOf(serr))
		case serr == nil && item.Err != nil:
			s.t.Errorf("store %q: %s: expected the object a single read returns, the batch returned: %v", s.h.Name, what, item.Err)
		case serr != nil:
			if classOf(serr) != classOf(item.Err) {
				s.t.Errorf("store %q: %s: expected an error of class %s as a single read returns, the batch returned one of class %s: %v", s.h.Name, what, classOf(serr), classOf(item.Err), item.Err)
			}
		default:
			if item.Object.Version != single.Version {
				s.t.Errorf("store %q: %s: expected version %q as a single read returns, the batch returned version %q", s.h.Name, what, single.Version, item.Object.Version)
			}
			if problem := diffFields(item.Object, single.Fields); single.Fields != nil && problem != "" {
				s.t.Errorf("store %q: %s: compared with a single read: %s", s.h.Name, what, problem)
			}
			if single.Fields == nil && string(item.Object.Value) != string(single.Value) {
				s.t.Errorf("store %q: %s: expected the value a single read returns, the batch returned another", s.h.Name, what)
			}
		}
	}
	if !errors.Is(items[1].Err, engine.ErrNotFound) {
		s.expectClass(items[1].Err, engine.ErrNotFound, fmt.Sprintf("ref 1 of a batch read (key %q, which does not exist)", missing))
	}
}

// watchAnnouncesWrites: a write through the store (or a seed, for a store
// that cannot write) is announced by the watch, by its key, within
// WatchTimeout; no announced key carries a value; and the watch ends with
// its context.
func (s *suite) watchAnnouncesWrites() {
	key := s.key("watch")
	write := s.watchWrite(key)
	if write == nil {
		s.t.Skipf("store %q can watch, but neither writes nor has a Seed: nothing can make a change to announce", s.h.Name)
	}
	if s.h.Ops.Writer != nil {
		defer s.cleanup(key)
	}
	timeout := s.h.WatchTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	announced := make(chan []string, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.h.Ops.Watcher.Watch(ctx, func(keys []string) {
			select {
			case announced <- keys:
			default: // the check reads what it needs; more is dropped
			}
		})
	}()
	var (
		mu      sync.Mutex
		written [][]byte
	)
	// The watch gives no sign that it is in place: write again until
	// the key is announced, every second, for WatchTimeout at most.
	deadline := time.After(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for round := 0; ; round++ {
		f := fields(fmt.Sprintf("watch-%d", round))
		mu.Lock()
		for _, v := range f {
			written = append(written, v)
		}
		mu.Unlock()
		if err := write(f); err != nil {
			s.t.Fatalf("store %q: writing key %q for the watch to announce: %v", s.h.Name, key, err)
		}
	inner:
		for {
			select {
			case keys := <-announced:
				for _, k := range keys {
					for _, v := range written {
						if strings.Contains(k, string(v)) {
							s.t.Errorf("store %q: the watch announced a key that holds a written value: a watch announces keys only", s.h.Name)
						}
					}
					if k == key {
						cancel()
						s.watchEnds(done, timeout)
						return
					}
				}
			case err := <-done:
				s.t.Fatalf("store %q: the watch ended before it announced key %q: %v", s.h.Name, key, err)
			case <-tick.C:
				break inner
			case <-deadline:
				s.t.Fatalf("store %q: key %q was written %d times, and the watch did not announce it within %s", s.h.Name, key, round+1, timeout)
			}
		}
	}
}

// watchEnds checks that a watch whose context ended returns, with that
// context's error or nil.
func (s *suite) watchEnds(done <-chan error, timeout time.Duration) {
	s.t.Helper()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			s.t.Errorf("store %q: a watch whose context ended: expected it to return the context's error, it returned: %v", s.h.Name, err)
		}
	case <-time.After(timeout):
		s.t.Errorf("store %q: a watch whose context ended did not return within %s", s.h.Name, timeout)
	}
}

// watchWrite returns how the watch check changes key: through the store's
// writer, or by seeding it; nil when it can do neither.
func (s *suite) watchWrite(key string) func(map[string][]byte) error {
	switch {
	case s.h.Ops.Writer != nil:
		return func(f map[string][]byte) error {
			ctx, cancel := s.ctx()
			defer cancel()
			_, err := s.h.Ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: f}, ownerA)
			return err
		}
	case s.h.Seed != nil:
		return func(f map[string][]byte) error { return s.seedErr(key, f) }
	}
	return nil
}
