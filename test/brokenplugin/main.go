// Command brokenplugin is a store plugin, built with the SDK, that lies:
// the conformance suite must fail it and name each lie. Each store picks
// one lie with its config's "lie" key, so one process shows them all:
//
//   - wrong-class: a missing key is PermissionDenied, not NotFound;
//   - overwrite: writes over a secret another owner's marker protects;
//   - refuse-writes: announces write, then refuses every write;
//   - frozen-versions: every write returns, and every read shows, version 1.
//
// Otherwise it keeps secrets in memory, with versions and markers, as the
// example memory plugin does. It exists for the tests of the suite and of
// `watchword plugin conformance`; do not use it as an example.
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

// The lies, by the value of config "lie".
const (
	wrongClass     = "wrong-class"
	overwrite      = "overwrite"
	refuseWrites   = "refuse-writes"
	frozenVersions = "frozen-versions"
)

var lies = []string{wrongClass, overwrite, refuseWrites, frozenVersions}

type secret struct {
	owner    string
	versions []map[string][]byte
}

type broken struct {
	mu      sync.Mutex
	secrets map[string]*secret // by lie + "/" + key
}

func (b *broken) find(cfg plugin.Config, key string) *secret {
	return b.secrets[cfg["lie"]+"/"+key]
}

func (b *broken) version(cfg plugin.Config, n int) string {
	if cfg["lie"] == frozenVersions {
		return "1"
	}
	return strconv.Itoa(n)
}

func (b *broken) Get(_ context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.find(cfg, ref.Key)
	if s == nil {
		if cfg["lie"] == wrongClass {
			return plugin.Secret{}, fmt.Errorf("key %q: %w", ref.Key, plugin.ErrPermissionDenied)
		}
		return plugin.Secret{}, fmt.Errorf("key %q does not exist: %w", ref.Key, plugin.ErrNotFound)
	}
	n := len(s.versions)
	if ref.Version != "" {
		v, err := strconv.Atoi(ref.Version)
		if err != nil || v < 1 || v > len(s.versions) {
			return plugin.Secret{}, fmt.Errorf("key %q has no version %q: %w", ref.Key, ref.Version, plugin.ErrNotFound)
		}
		n = v
	}
	return plugin.Secret{Version: b.version(cfg, n), Fields: maps.Clone(s.versions[n-1])}, nil
}

func (b *broken) CurrentVersion(_ context.Context, cfg plugin.Config, key string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.find(cfg, key)
	if s == nil {
		return "", fmt.Errorf("key %q does not exist: %w", key, plugin.ErrNotFound)
	}
	return b.version(cfg, len(s.versions)), nil
}

func (b *broken) Put(_ context.Context, cfg plugin.Config, key string, p plugin.Publication, owner plugin.Owner) (string, error) {
	if cfg["lie"] == refuseWrites {
		return "", fmt.Errorf("key %q: this store takes no writes: %w", key, plugin.ErrNotSupported)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.find(cfg, key)
	if s == nil {
		s = &secret{owner: owner.ID}
		b.secrets[cfg["lie"]+"/"+key] = s
	}
	if s.owner != owner.ID && cfg["lie"] != overwrite && (s.owner != "" || !owner.Adopt) {
		return "", fmt.Errorf("key %q belongs to another owner: %w", key, plugin.ErrNotOwned)
	}
	s.owner = owner.ID
	if n := len(s.versions); n > 0 && maps.EqualFunc(s.versions[n-1], p.Fields, func(a, b []byte) bool { return string(a) == string(b) }) {
		return b.version(cfg, n), nil
	}
	s.versions = append(s.versions, maps.Clone(p.Fields))
	return b.version(cfg, len(s.versions)), nil
}

func (b *broken) Delete(_ context.Context, cfg plugin.Config, key string, owner plugin.Owner) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.find(cfg, key)
	if s == nil {
		return nil
	}
	if s.owner != owner.ID && cfg["lie"] != overwrite {
		return fmt.Errorf("key %q belongs to another owner: %w", key, plugin.ErrNotOwned)
	}
	delete(b.secrets, cfg["lie"]+"/"+key)
	return nil
}

func validate(cfg plugin.Config) error {
	if !slices.Contains(lies, cfg["lie"]) {
		return fmt.Errorf("config.lie must be one of %s: %w", strings.Join(lies, ", "), plugin.ErrInvalidConfig)
	}
	return nil
}

func main() {
	b := &broken{secrets: map[string]*secret{}}
	plugin.Main(plugin.Store{Name: "broken", Version: "v0.0.1", Reader: b, Versions: b, Writer: b, ValidateConfig: validate},
		"unix:///run/watchword/broken.sock")
}
