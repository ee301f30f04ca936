package plugin

import (
	"context"
	"errors"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/pluginwire"
)

// BatchReader reads several secrets in one call (capability batchRead),
// for a store where one call for many secrets is cheaper than one each.
// GetBatch returns one result per ref, in the order of refs; a result's
// Err is that secret's own error (ErrNotFound, …), while GetBatch's error
// fails the whole batch. Watchword sends at most MaxBatchRefs refs.
type BatchReader interface {
	GetBatch(ctx context.Context, cfg Config, refs []Ref) ([]BatchResult, error)
}

// BatchResult is the outcome of one ref of a batch read.
type BatchResult struct {
	Secret Secret
	Err    error
}

// MaxBatchRefs is the most refs one batch read carries.
const MaxBatchRefs = pluginwire.MaxBatchRefs

// Watcher announces the keys whose secrets change (capability watch), so
// that Watchword refreshes what reads them at once instead of at its next
// interval. Watch puts its watch in place, calls feed.Ready, then calls
// feed.Changed with the keys that change (keys only, never values) until
// ctx ends (Watchword ends the call, or Serve shuts down); it returns nil
// or ctx's error then, and an error when it can no longer watch (the
// store's feed broke): Watchword watches again after a backoff. Once a
// watch is ready, Watchword refreshes everything it reads from the store,
// since what changed before the watch was in place was not announced.
type Watcher interface {
	Watch(ctx context.Context, cfg Config, keys []string, feed Feed) error
}

// Feed is where a Watcher announces changes. Its methods are safe for
// concurrent use; an error means Watchword is gone, and Watch returns.
type Feed interface {
	// Ready tells that the watch is in place: every change from now on
	// is announced. Changed calls it if Watch has not.
	Ready() error
	// Changed announces that the secrets of keys changed. Keys that the
	// watch was not asked for (keys of Watch, when not empty) are
	// dropped.
	Changed(keys ...string) error
}

func (s *server) BatchGet(ctx context.Context, req *pluginv1.BatchGetRequest) (*pluginv1.BatchGetResponse, error) {
	if s.store.Batch == nil {
		return nil, unimplemented("batchRead")
	}
	if n := len(req.GetRefs()); n > MaxBatchRefs {
		return nil, status.Errorf(codes.InvalidArgument, "a batch read of %d refs; at most %d are allowed", n, MaxBatchRefs)
	}
	refs := make([]Ref, len(req.GetRefs()))
	for i, r := range req.GetRefs() {
		refs[i] = Ref{Key: r.GetKey(), Version: r.GetVersion()}
	}
	results, err := s.store.Batch.GetBatch(ctx, config(req.GetConfig()), refs)
	if err != nil {
		return nil, fail(err)
	}
	if len(results) != len(refs) {
		return nil, status.Errorf(codes.Internal, "the plugin answered a batch read of %d refs with %d results", len(refs), len(results))
	}
	out := &pluginv1.BatchGetResponse{Results: make([]*pluginv1.BatchGetResult, len(results))}
	for i, r := range results {
		if r.Err != nil {
			st := pluginwire.Status(r.Err)
			out.Results[i] = &pluginv1.BatchGetResult{Code: int32(st.Code()), Message: st.Message()}
			continue
		}
		out.Results[i] = &pluginv1.BatchGetResult{Secret: &pluginv1.Secret{Version: r.Secret.Version, Value: r.Secret.Value, Fields: r.Secret.Fields}}
	}
	return out, nil
}

func (s *server) Watch(req *pluginv1.WatchRequest, stream grpc.ServerStreamingServer[pluginv1.WatchEvent]) error {
	if s.store.Watcher == nil {
		return unimplemented("watch")
	}
	f := &feed{stream: stream}
	if len(req.GetKeys()) > 0 {
		f.only = map[string]bool{}
		for _, k := range req.GetKeys() {
			f.only[k] = true
		}
	}
	// The watch ends with Watchword's call, or when Serve shuts down.
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stop := context.AfterFunc(s.stopping, cancel)
	defer stop()
	err := s.store.Watcher.Watch(ctx, config(req.GetConfig()), req.GetKeys(), f)
	switch {
	case stream.Context().Err() != nil:
		// Watchword went away: not the plugin's failure.
		return nil
	case s.stopping.Err() != nil:
		return status.Error(codes.Unavailable, "the plugin is shutting down")
	case err == nil:
		err = errors.New("the plugin's watch ended")
	}
	return fail(err)
}

// feed sends a watch's events on its stream.
type feed struct {
	stream grpc.ServerStreamingServer[pluginv1.WatchEvent]
	only   map[string]bool

	mu    sync.Mutex
	ready bool
}

func (f *feed) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyLocked()
}

func (f *feed) readyLocked() error {
	if f.ready {
		return nil
	}
	if err := f.stream.SendHeader(metadata.Pairs(pluginwire.WatchReadyHeader, "true")); err != nil {
		return err
	}
	f.ready = true
	return nil
}

func (f *feed) Changed(keys ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readyLocked(); err != nil {
		return err
	}
	for _, k := range keys {
		if f.only != nil && !f.only[k] {
			continue
		}
		if err := f.stream.Send(&pluginv1.WatchEvent{Key: k}); err != nil {
			return err
		}
	}
	return nil
}
