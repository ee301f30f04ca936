package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/pkg/plugin"
)

// restartablePlugin serves store on a fixed socket and can be stopped and
// started again on it.
type restartablePlugin struct {
	t        *testing.T
	endpoint string
	store    plugin.Store
	stop     func()
}

func newRestartablePlugin(t *testing.T, store plugin.Store) *restartablePlugin {
	p := newStoppedPlugin(t, store)
	p.start()
	return p
}

// newStoppedPlugin is a restartablePlugin that has not started yet: its
// socket does not exist.
func newStoppedPlugin(t *testing.T, store plugin.Store) *restartablePlugin {
	dir, err := os.MkdirTemp("", "wwr") // short: a socket path has at most 107 bytes
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p := &restartablePlugin{t: t, endpoint: "unix://" + filepath.Join(dir, "p.sock"), store: store}
	t.Cleanup(func() {
		if p.stop != nil {
			p.stop()
		}
	})
	return p
}

func (p *restartablePlugin) start() {
	lis, err := plugin.Listen(p.endpoint)
	must(p.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- plugin.ServeListener(ctx, lis, p.store) }()
	p.stop = func() {
		cancel()
		must(p.t, <-done)
		p.stop = nil
	}
}

// waitStoreReason waits until the store is Pending with Ready False for
// reason, and a message holding every fragment.
func waitStoreReason(t *testing.T, obj *v1alpha1.SecretStore, reason string, fragments ...string) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		st := storeStatus(t, obj)
		c := readyOf(st)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || st.Phase != v1alpha1.StorePhasePending {
			return false, fmt.Sprintf("phase %s, Ready %+v", st.Phase, c)
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return false, fmt.Sprintf("message %q lacks %q", c.Message, f)
			}
		}
		return true, ""
	})
}

// TestPluginStopsAndComesBack: an ExternalSecret syncs through a plugin;
// the plugin stops (its server closes and its socket goes): the store's
// condition turns PluginUnavailable by itself, the ExternalSecret says so
// too and its target keeps its data; the plugin starts again on the same
// socket: the store and the ExternalSecret recover without any edit and
// without restarting the controller.
func TestPluginStopsAndComesBack(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	p := newRestartablePlugin(t, plugin.Store{Name: "teams", Reader: teamStore{}})
	pluginStore(t, ns, "teams", p.endpoint, map[string]string{"team": "payments"})
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "teams"}}
	storeStatus(t, store)
	waitStoreRecovers(t, store)
	newES(t, ns, "db", "teams", withRefresh(2*time.Second), withData("user", "db", "user"))
	want := map[string]string{"user": "payments-app"}
	waitSecretData(t, ns, "db", want)

	p.stop()
	waitStoreReason(t, store, "PluginUnavailable", "plugin teams at "+p.endpoint, "socket does not exist")
	waitCondition(t, ns, "db", "PluginUnavailable", "socket does not exist")
	waitSecretData(t, ns, "db", want) // still there, unchanged

	p.start()
	waitStoreRecovers(t, store)
	waitReady(t, ns, "db")
	waitSecretData(t, ns, "db", want)
}

// TestPluginTCPWithoutTLS: a tcp:// endpoint without plugin.tls is refused
// with a condition that says what to set.
func TestPluginTCPWithoutTLS(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	pluginStore(t, ns, "plain", "tcp://127.0.0.1:7443", nil)
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
	waitStoreReason(t, store, "InvalidStoreConfig", "set plugin.tls (caSecretRef, certSecretRef and keySecretRef)")
}
