package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/watchword-dev/watchword/pkg/plugin"
)

// memory is a store that keeps every version of every secret in memory,
// in partitions: the store's config key "partition" picks one, so that
// several stores share the plugin without seeing each other's secrets.
type memory struct {
	mu         sync.Mutex
	partitions map[string]map[string]*secret
}

type secret struct {
	owner    string // the ownership marker; "" when nobody owns it
	versions []map[string][]byte
}

func newMemory() *memory { return &memory{partitions: map[string]map[string]*secret{}} }

// store is the plugin: it reads, tells versions, writes and deletes.
func (m *memory) store() plugin.Store {
	return plugin.Store{Name: "memory", Version: "v0.1.0", Reader: m, Versions: m, Writer: m, ValidateConfig: validateConfig}
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
	return nil
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
}
