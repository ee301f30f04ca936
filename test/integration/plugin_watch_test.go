package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
	"github.com/watchword-dev/watchword/pkg/plugin"
)

// watchedStore is a plugin store of one key, "db" (field "password"), whose
// value the test changes with set, and whose watches tell of each change.
// Until open is called, a watch waits before it is in place.
type watchedStore struct {
	mu       sync.Mutex
	value    string
	version  int
	watches  map[chan string]bool
	gate     chan struct{}
	openOnce sync.Once
}

func newWatchedStore(value string) *watchedStore {
	return &watchedStore{value: value, version: 1, watches: map[chan string]bool{}, gate: make(chan struct{})}
}

func (s *watchedStore) plugin() plugin.Store {
	return plugin.Store{Name: "watched", Reader: s, Watcher: s}
}

// open lets the watches be put in place.
func (s *watchedStore) open() { s.openOnce.Do(func() { close(s.gate) }) }

// set changes the value; the watches in place tell of it.
func (s *watchedStore) set(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value = value
	s.version++
	for ch := range s.watches {
		select {
		case ch <- "db":
		default:
		}
	}
}

func (s *watchedStore) Get(_ context.Context, _ plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	if ref.Key != "db" {
		return plugin.Secret{}, plugin.ErrNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref.Version != "" && ref.Version != strconv.Itoa(s.version) {
		return plugin.Secret{}, plugin.ErrNotFound
	}
	return plugin.Secret{Version: strconv.Itoa(s.version), Fields: map[string][]byte{"password": []byte(s.value)}}, nil
}

func (s *watchedStore) Watch(ctx context.Context, _ plugin.Config, _ []string, feed plugin.Feed) error {
	select {
	case <-ctx.Done():
		return nil
	case <-s.gate:
	}
	ch := make(chan string, 16)
	s.mu.Lock()
	s.watches[ch] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watches, ch)
		s.mu.Unlock()
	}()
	if err := feed.Ready(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case k := <-ch:
			if err := feed.Changed(k); err != nil {
				return err
			}
		}
	}
}

// changesWatched is the store's ChangesWatched condition, or nil.
func changesWatched(t *testing.T, store *v1alpha1.SecretStore) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(storeStatus(t, store).Conditions, conditions.ChangesWatched)
}

// TestPluginWatchStartRefreshesWhatChangedBefore: the value changes after
// the ExternalSecret read it and before the store's watch is in place, so
// that no watch tells of it. Once the watch is in place the
// ExternalSecret refreshes all the same, long before its hourly interval.
func TestPluginWatchStartRefreshesWhatChangedBefore(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := newWatchedStore("one")
	pluginStore(t, ns, "watched", startPlugin(t, s.plugin()), nil)
	newES(t, ns, "db", "watched", withRefresh(time.Hour), withData("password", "db", "password"))
	waitSecretData(t, ns, "db", map[string]string{"password": "one"})
	if c := waitWatchState(t, ns, "watched", conditions.WatchStarting); c.Status != metav1.ConditionFalse {
		t.Fatalf("ChangesWatched %+v while the watch is not in place, want False", c)
	}

	s.set("two") // no watch is in place to tell of it
	s.open()
	waitWatchState(t, ns, "watched", conditions.WatchActive)
	waitSecretData(t, ns, "db", map[string]string{"password": "two"})

	s.set("three") // told by the watch
	waitSecretData(t, ns, "db", map[string]string{"password": "three"})
}

// TestPluginStoreCreatedBeforeItsPluginIsWatchedOnceReady: a store whose
// plugin starts after it was created has its changes watched as soon as
// it is Ready, not at the store watch's next recheck (a minute).
func TestPluginStoreCreatedBeforeItsPluginIsWatchedOnceReady(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := newWatchedStore("one")
	s.open()
	p := newStoppedPlugin(t, s.plugin())
	pluginStore(t, ns, "late", p.endpoint, nil)
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}
	newES(t, ns, "db", "late", withRefresh(time.Hour), withData("password", "db", "password"))
	waitStoreReason(t, store, "PluginUnavailable", "socket does not exist")
	waitWatchState(t, ns, "late", conditions.WatchStoreNotReady)

	p.start()
	waitStoreRecovers(t, store)
	ready := time.Now()
	// Well within the recheck's minute, with room for the load of the
	// tests running beside this one.
	eventually(t, 30*time.Second, func() (bool, string) {
		c := changesWatched(t, store)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == conditions.WatchActive,
			fmt.Sprintf("%s after the store turned Ready: ChangesWatched %+v", time.Since(ready).Round(time.Second), c)
	})
	waitSecretData(t, ns, "db", map[string]string{"password": "one"})
	s.set("two")
	waitSecretData(t, ns, "db", map[string]string{"password": "two"})
}

// TestPluginRestartRestartsTheStoreWatchAtOnce: the plugin stops for long
// enough that the store watch's backoff has grown to half a minute (and
// the store's gate holds it for as long after each failed check), and
// comes back. The store is Ready again as soon as Watchword's connection
// to the plugin is (gRPC tries again at most every 30 s, with jitter),
// not after the rest of the gate's hold and the store's own backoff; and
// once it is Ready, its changes are watched again within seconds, not at
// the end of the watch's backoff.
func TestPluginRestartRestartsTheStoreWatchAtOnce(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	s := newWatchedStore("one")
	s.open()
	p := newRestartablePlugin(t, s.plugin())
	pluginStore(t, ns, "restarts", p.endpoint, nil)
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restarts"}}
	newES(t, ns, "db", "restarts", withRefresh(time.Hour), withData("password", "db", "password"))
	waitSecretData(t, ns, "db", map[string]string{"password": "one"})
	waitWatchState(t, ns, "restarts", conditions.WatchActive)

	p.stop()
	waitStoreReason(t, store, "PluginUnavailable", "socket does not exist")
	after := regexp.MustCompile(`watching again after (\d+)s`)
	eventually(t, storeWait, func() (bool, string) {
		c := changesWatched(t, store)
		if c == nil || c.Reason != conditions.WatchBroken {
			return false, fmt.Sprintf("ChangesWatched %+v, want %s", c, conditions.WatchBroken)
		}
		m := after.FindStringSubmatch(c.Message)
		if m == nil {
			return false, fmt.Sprintf("ChangesWatched message %q names no backoff", c.Message)
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 30, fmt.Sprintf("the watch's backoff is %ds, waiting for 30s or more", n)
	})

	p.start()
	restarted := time.Now()
	eventually(t, 45*time.Second, func() (bool, string) {
		st := storeStatus(t, store)
		c := readyOf(st)
		return c != nil && c.Status == metav1.ConditionTrue,
			fmt.Sprintf("%s after the plugin's restart: Ready %+v", time.Since(restarted).Round(time.Second), c)
	})
	ready := time.Now()
	// Shorter than the watch's backoff of 30 s or more, with room for the
	// load of the tests running beside this one.
	eventually(t, 20*time.Second, func() (bool, string) {
		c := changesWatched(t, store)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == conditions.WatchActive,
			fmt.Sprintf("%s after the store turned Ready again: ChangesWatched %+v", time.Since(ready).Round(time.Second), c)
	})
	t.Logf("Ready %s after the plugin's restart; changes watched again %s after that",
		ready.Sub(restarted).Round(100*time.Millisecond), time.Since(ready).Round(100*time.Millisecond))
	s.set("two")
	waitSecretData(t, ns, "db", map[string]string{"password": "two"})
}
