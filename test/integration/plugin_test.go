package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/pkg/plugin"
)

// teamStore is a read-only plugin store: one secret per team, where the
// store's config names the team.
type teamStore struct{}

func (teamStore) Get(_ context.Context, cfg plugin.Config, ref plugin.Ref) (plugin.Secret, error) {
	if ref.Key != "db" {
		// As docs/plugins.md says: Watchword names the plugin and the key.
		return plugin.Secret{}, fmt.Errorf("the team has no such secret: %w", plugin.ErrNotFound)
	}
	return plugin.Secret{Version: "1", Fields: map[string][]byte{"user": []byte(cfg["team"] + "-app")}}, nil
}

// startPlugin serves store on a socket of its own until the test ends.
func startPlugin(t *testing.T, store plugin.Store) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wwp") // short: a socket path has at most 107 bytes
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "p.sock")
	lis, err := plugin.Listen(endpoint)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- plugin.ServeListener(ctx, lis, store) }()
	t.Cleanup(func() {
		cancel()
		must(t, <-done)
	})
	return endpoint
}

func pluginStore(t *testing.T, ns, name, endpoint string, cfg map[string]string) {
	t.Helper()
	s := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Plugin: &v1alpha1.PluginProvider{
			Endpoint: endpoint, Config: cfg}}}}
	must(t, k8s.Create(context.Background(), s))
}

// TestPluginStoreSyncs: an ExternalSecret reads through a store served by
// a plugin, which gets the store's config with every call.
func TestPluginStoreSyncs(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	endpoint := startPlugin(t, plugin.Store{Name: "teams", Reader: teamStore{}})
	pluginStore(t, ns, "teams", endpoint, map[string]string{"team": "payments"})
	newES(t, ns, "db", "teams", withData("user", "db", "user"))
	waitSecretData(t, ns, "db", map[string]string{"user": "payments-app"})

	newES(t, ns, "missing", "teams", withData("user", "nope", "user"))
	es := waitCondition(t, ns, "missing", "NotFound", `key "nope"`, "plugin teams at unix://", "the team has no such secret")
	// The ExternalSecret's words and the plugin client's each name the
	// key, and the class is said once.
	msg := readyCond(es).Message
	if strings.Count(msg, `"nope"`) != 2 || strings.Count(msg, "not found") != 1 {
		t.Errorf("message %q: want the key named twice and the class once", msg)
	}
}

// TestPluginStoreUnreachable: a store whose plugin does not listen says
// so, with its own reason.
func TestPluginStoreUnreachable(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	pluginStore(t, ns, "gone", "unix:///nonexistent/watchword-test.sock", nil)
	newES(t, ns, "db", "gone", withData("user", "db", "user"))
	waitCondition(t, ns, "db", "PluginUnavailable", "unix:///nonexistent/watchword-test.sock", "its socket does not exist")
}
