package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/watchword-dev/watchword/api/plugin/v1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/internal/pluginwire"
)

// withStreams adds the batch read and the watch to ops when the plugin
// announced them at the handshake.
func (c *Client) withStreams(ops engine.Ops, caps engine.Capabilities) engine.Ops {
	if caps.Has(engine.CanBatchRead) {
		ops.Batch = c
	}
	if caps.Has(engine.CanWatch) {
		ops.Watcher = &watcher{c: c}
	}
	return ops
}

// GetSecrets reads several secrets with one BatchGet call per
// pluginwire.MaxBatchRefs refs. Each item's error is of the engine's class
// for the status code the plugin gave that ref.
func (c *Client) GetSecrets(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	out := make([]engine.BatchItem, 0, len(refs))
	for start := 0; start < len(refs); start += pluginwire.MaxBatchRefs {
		part := refs[start:min(start+pluginwire.MaxBatchRefs, len(refs))]
		items, err := c.batchGet(ctx, part)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (c *Client) batchGet(ctx context.Context, refs []engine.Ref) ([]engine.BatchItem, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	req := &pluginv1.BatchGetRequest{Config: c.config, Refs: make([]*pluginv1.Ref, len(refs))}
	for i, r := range refs {
		req.Refs[i] = &pluginv1.Ref{Key: r.Key, Version: r.Version}
	}
	resp, err := c.rpc.BatchGet(ctx, req)
	if err != nil {
		return nil, pluginwire.Error(c.name(), fmt.Sprintf("reading %d keys in one batch", len(refs)), err)
	}
	results := resp.GetResults()
	if len(results) != len(refs) {
		return nil, fmt.Errorf("plugin %s answered a batch read of %d keys with %d results: %w", c.name(), len(refs), len(results), engine.ErrUnavailable)
	}
	items := make([]engine.BatchItem, len(refs))
	for i, r := range results {
		what := fmt.Sprintf("reading key %q%s", refs[i].Key, versionText(refs[i].Version))
		if code := codes.Code(r.GetCode()); code != codes.OK {
			items[i].Err = pluginwire.Error(c.name(), what, status.Error(code, r.GetMessage()))
			continue
		}
		if r.GetSecret() == nil {
			items[i].Err = fmt.Errorf("plugin %s: %s: the batch result has neither a secret nor an error: %w", c.name(), what, engine.ErrUnavailable)
			continue
		}
		s := r.GetSecret()
		items[i].Object = engine.Object{Version: s.GetVersion(), Value: s.GetValue(), Fields: s.GetFields()}
	}
	return items, nil
}

// watcher is the change feed of a plugin's store: one Watch stream at a
// time, with no deadline, until its context ends or the stream breaks.
type watcher struct {
	c *Client
}

// Watch opens a Watch stream for every key of the store and calls changed
// with each key the plugin announces. Once the plugin says its watch is in
// place, it calls changed(nil) first: anything may have changed before,
// while no watch was. It returns ctx's error when ctx ends, and an error
// of class ErrUnavailable (or the class of the plugin's status) when the
// stream broke.
func (w *watcher) Watch(ctx context.Context, changed func(keys []string)) error {
	c := w.c
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Watch(ctx, &pluginv1.WatchRequest{Config: c.config})
	if err != nil {
		return w.broke(ctx, err)
	}
	// The plugin sends its headers once its watch is in place; a stream
	// that ends without them ended with an error, which Recv returns.
	md, err := stream.Header()
	if err != nil {
		return w.broke(ctx, err)
	}
	if len(md.Get(pluginwire.WatchReadyHeader)) == 0 {
		_, err := stream.Recv()
		if err == nil {
			err = status.Error(codes.Internal, "the plugin sent an event before saying its watch was in place")
		}
		return w.broke(ctx, err)
	}
	changed(nil)
	for {
		ev, err := stream.Recv()
		if err != nil {
			return w.broke(ctx, err)
		}
		changed([]string{ev.GetKey()})
	}
}

// broke turns the end of a stream into Watch's error.
func (w *watcher) broke(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("plugin %s ended the watch: %w", w.c.name(), engine.ErrUnavailable)
	}
	return pluginwire.Error(w.c.name(), "watching", err)
}
