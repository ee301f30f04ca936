package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

// memory is a store that keeps every version of every secret in memory,
// in partitions: the store's config key "partition" picks one, so that
// several stores share the plugin without seeing each other's secrets.
type memory struct {
	mu         sync.Mutex
	partitions map[string]map[string]*secret
	// watchers are the watches in place: each is told the partition and
	// key of every change.
	watchers map[*watch]bool
}

type secret struct {
	owner    string // the ownership marker; "" when nobody owns it
	versions []map[string][]byte
}

func newMemory() *memory {
	return &memory{partitions: map[string]map[string]*secret{}, watchers: map[*watch]bool{}}
}

// store is the plugin: it reads (one by one or in batches), tells
// versions, lists, writes, deletes and announces changes.
func (m *memory) store() plugin.Store {
	return plugin.Store{Name: "memory", Version: "v0.2.0", Reader: m, Versions: m, Writer: m, Batch: m, Watcher: m, Lister: m,
		ValidateConfig: validateConfig}
}

func validateConfig(cfg plugin.Config) error {
	for k := range cfg {
		if k != "partition" {
			return fmt.Errorf("config key %q is unknown; the memory plugin knows only \"partition\": %w", k, plugin.ErrInvalidConfig)
		}
	}
	return nil
}

// partition returns the secrets of cfg's partition; m.mu is held.
func (m *memory) partition(cfg plugin.Config) map[string]*secret {
	p := m.partitions[cfg["partition"]]
	if p == nil {
		p = map[string]*secret{}
		m.partitions[cfg["partition"]] = p
	}
	return p
}

func (m *memory) Get(_ context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.partition(cfg)[ref.Key]
	if s == nil {
		return plugin.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, plugin.ErrNotFound)
	}
	n := len(s.versions)
	if ref.Version != "" {
		v, err := strconv.Atoi(ref.Version)
		if err != nil || v < 1 || v > n {
			return plugin.Secret{}, fmt.Errorf("key %q has no version %q (it has 1 to %d): %w", ref.Key, ref.Version, n, plugin.ErrNotFound)
		}
		n = v
	}
	return plugin.Secret{Version: strconv.Itoa(n), Fields: maps.Clone(s.versions[n-1])}, nil
}

func (m *memory) CurrentVersion(_ context.Context, cfg plugin.Config, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.partition(cfg)[key]
	if s == nil {
		return "", fmt.Errorf("key %q does not exist: %w", key, plugin.ErrNotFound)
	}
	return strconv.Itoa(len(s.versions)), nil
}

func (m *memory) Put(_ context.Context, cfg plugin.Config, key string, p plugin.Publication, owner plugin.Owner) (string, error) {
	if len(p.Labels) > 0 || len(p.Annotations) > 0 || p.Type != "" {
		return "", fmt.Errorf("key %q: the memory store keeps no labels, annotations or type: %w", key, plugin.ErrNotSupported)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	part := m.partition(cfg)
	s := part[key]
	switch {
	case s == nil:
		s = &secret{}
		part[key] = s
	case s.owner == owner.ID:
	case s.owner != "":
		return "", fmt.Errorf("key %q is owned by %s: %w", key, s.owner, plugin.ErrNotOwned)
	case !owner.Adopt:
		return "", fmt.Errorf("key %q carries no ownership marker; it is written only with adopt: %w", key, plugin.ErrNotOwned)
	}
	s.owner = owner.ID
	s.versions = append(s.versions, maps.Clone(p.Fields))
	m.changed(cfg["partition"], key)
	return strconv.Itoa(len(s.versions)), nil
}

func (m *memory) Delete(_ context.Context, cfg plugin.Config, key string, owner plugin.Owner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	part := m.partition(cfg)
	s := part[key]
	if s == nil {
		return nil
	}
	if s.owner != owner.ID {
		return fmt.Errorf("key %q is not owned by %s; leaving it: %w", key, owner.ID, plugin.ErrNotOwned)
	}
	delete(part, key)
	m.changed(cfg["partition"], key)
	return nil
}

// listPage is the page size of a listing that asks for none.
const listPage = 100

// List lists the keys of cfg's partition that begin with the prefix, in
// order, with their current versions, a page after the last key of the
// previous page. The memory store has no tags: a listing by tags is
// refused.
func (m *memory) List(_ context.Context, cfg plugin.Config, req plugin.ListRequest) (plugin.ListPage, error) {
	if len(req.Tags) > 0 {
		return plugin.ListPage{}, fmt.Errorf("the memory store has no tags to list by: %w", plugin.ErrNotSupported)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = listPage
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	part := m.partition(cfg)
	var keys []string
	for k := range part {
		if strings.HasPrefix(k, req.Prefix) && k > req.PageToken {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var page plugin.ListPage
	if len(keys) > limit {
		keys = keys[:limit]
		page.NextPageToken = keys[limit-1]
	}
	for _, k := range keys {
		page.Items = append(page.Items, plugin.ListItem{Key: k, Version: strconv.Itoa(len(part[k].versions))})
	}
	return page, nil
}

// seed writes a secret without an ownership marker, as someone other than
// Watchword would: the tests use it.
func (m *memory) seed(partition, key string, fields map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	part := m.partition(plugin.Config{"partition": partition})
	s := part[key]
	if s == nil {
		s = &secret{}
		part[key] = s
	}
	s.owner = ""
	s.versions = append(s.versions, maps.Clone(fields))
	m.changed(partition, key)
}

// GetBatch reads each ref as Get does.
func (m *memory) GetBatch(ctx context.Context, cfg plugin.Config, refs []plugin.Ref) ([]plugin.BatchResult, error) {
	out := make([]plugin.BatchResult, len(refs))
	for i, ref := range refs {
		out[i].Secret, out[i].Err = m.Get(ctx, cfg, ref)
	}
	return out, nil
}

// watch is one Watch in place: the keys of its partition that changed.
type watch struct {
	partition string
	keys      chan string
}

// Watch announces every key of cfg's partition that is written, seeded
// or deleted, until ctx ends. A watch that falls behind by more than its
// buffer ends with ErrUnavailable, so that Watchword watches again and
// refreshes everything.
func (m *memory) Watch(ctx context.Context, cfg plugin.Config, _ []string, feed plugin.Feed) error {
	w := &watch{partition: cfg["partition"], keys: make(chan string, 256)}
	m.mu.Lock()
	m.watchers[w] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.watchers, w)
		m.mu.Unlock()
	}()
	if err := feed.Ready(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case k, ok := <-w.keys:
			if !ok {
				return fmt.Errorf("the watch fell behind: %w", plugin.ErrUnavailable)
			}
			if err := feed.Changed(k); err != nil {
				return err
			}
		}
	}
}

// changed tells the watches of partition that key changed; m.mu is held.
// A watch whose buffer is full is ended (its channel closed).
func (m *memory) changed(partition, key string) {
	for w := range m.watchers {
		if w.partition != partition {
			continue
		}
		select {
		case w.keys <- key:
		default:
			close(w.keys)
			delete(m.watchers, w)
		}
	}
}
