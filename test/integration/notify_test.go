package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8swait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/controller/restart"
	"github.com/watchword-dev/watchword/internal/notify"
	"github.com/watchword-dev/watchword/internal/operator"
)

// notifyReceiver is a local HTTP server that takes notifications: for a
// generic webhook, only those whose signature and timestamp it verifies.
type notifyReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	refused  int
	received []notify.Event
}

func newNotifyReceiver(t *testing.T, key []byte) *notifyReceiver {
	t.Helper()
	rc := &notifyReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if key != nil {
			if err := notify.Verify(b, r.Header.Get(notify.TimestampHeader), r.Header.Get(notify.SignatureHeader), key, time.Now(), 5*time.Minute); err != nil {
				rc.refused++
				http.Error(w, "bad signature", http.StatusUnauthorized)
				return
			}
			var ev notify.Event
			if err := json.Unmarshal(b, &ev); err != nil || r.Header.Get(notify.DeliveryHeader) != ev.ID {
				rc.refused++
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			rc.received = append(rc.received, ev)
		}
		rc.bodies = append(rc.bodies, b)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// event is the first notification of type typ about workload, if any.
func (rc *notifyReceiver) event(typ, workload string) (notify.Event, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, ev := range rc.received {
		if ev.Type == typ && ev.Workload.Name == workload {
			return ev, true
		}
	}
	return notify.Event{}, false
}

func (rc *notifyReceiver) all() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var b strings.Builder
	for _, body := range rc.bodies {
		b.Write(body)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestNotifyRestartAndHold: an operator with a receivers' Secret announces
// a rotation's restart, and the hold of another workload's restart for
// its maintenance window, to a generic webhook that verifies the
// signature, and to Slack and Teams receivers; every notification names
// the workload, the Secret, the key and the versions, and none holds a
// value.
func TestNotifyRestartAndHold(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	class := "notify-" + ns
	must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watchword"}}))
	key := []byte("a-signing-key-of-32-bytes-or-more")
	hook := newNotifyReceiver(t, key)
	slack, teams := newNotifyReceiver(t, nil), newNotifyReceiver(t, nil)
	createSecret(t, ns, "receivers", map[string]string{
		notify.KeyWebhookURL: hook.srv.URL + "/hooks/watchword", notify.KeyWebhookSigningKey: string(key),
		notify.KeySlackURL: slack.srv.URL + "/services/T0/B0/TOKEN", notify.KeyTeamsURL: teams.srv.URL + "/workflows/1?sig=TOKEN",
	})
	startOperatorAsWith(t, ns, "watchword", class, func(o *operator.Options) {
		o.NotifySecret = types.NamespacedName{Namespace: ns, Name: "receivers"}
		o.Notify = notify.Options{Cluster: "integration", Backoff: k8swait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 6}}
	})

	const first, second = "first-value-8c1f07", "rotated-value-3e9a55"
	// A store of the class that reads an upstream Secret: changing it
	// makes a new version, which the ExternalSecret syncs as a rotation.
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"password": first})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store"},
		Spec: v1alpha1.SecretStoreSpec{Controller: class, SecretStoreProvider: v1alpha1.SecretStoreProvider{Kubernetes: &v1alpha1.KubernetesProvider{
			RemoteNamespace: src, Auth: v1alpha1.KubernetesAuth{Token: &v1alpha1.KubernetesTokenAuth{
				BearerToken: v1alpha1.SecretKeySelector{Name: "reader-token", Key: "token"}}}}}}}))
	newES(t, ns, "creds", "store", withData("password", "upstream", "password"), withRefresh(time.Second))
	waitSecretData(t, ns, "creds", map[string]string{"password": first})
	withClass := func(extra ...string) map[string]string {
		a := map[string]string{restart.ClassAnnotation: class, restart.OnAnnotation: "creds", restart.DebounceAnnotation: "1s"}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	newIdleWorkload(t, ns, "web", withClass(), envKey("creds", "password"))
	// A window that opens in twelve hours, long after the test.
	opens := time.Now().UTC().Add(12 * time.Hour)
	newIdleWorkload(t, ns, "nightly", withClass(restart.WindowAnnotation, fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour())), envFrom("creds"))
	waitRecorded(t, ns, "web", "creds")
	waitRecorded(t, ns, "nightly", "creds")

	rotate(t, src, "password", second)
	waitSecretData(t, ns, "creds", map[string]string{"password": second})
	waitEvent(t, ns, "web", restart.ReasonRestarted, `Secret "creds"`)
	waitEvent(t, ns, "nightly", restart.ReasonHeld, "maintenance window")

	var restartedEv, heldEv notify.Event
	eventually(t, wait, func() (bool, string) {
		var ok1, ok2 bool
		restartedEv, ok1 = hook.event(notify.TypeRestarted, "web")
		heldEv, ok2 = hook.event(notify.TypeHeld, "nightly")
		return ok1 && ok2, fmt.Sprintf("the webhook received %s", hook.all())
	})
	t.Logf("the webhook received:\n%s", hook.all())
	es := getES(t, ns, "creds")
	for _, ev := range []notify.Event{restartedEv, heldEv} {
		if ev.Workload != (notify.Workload{Kind: "Deployment", Namespace: ns, Name: ev.Workload.Name}) || ev.Cluster != "integration" || len(ev.ID) != 32 {
			t.Errorf("notification %+v", ev)
		}
		if len(ev.Secrets) != 1 || ev.Secrets[0].Name != "creds" || !ev.Secrets[0].RotatedAt.Equal(es.Status.LastRotationTime.Time) ||
			len(ev.Secrets[0].ExternalSecrets) != 1 || ev.Secrets[0].ExternalSecrets[0].Name != "creds" ||
			ev.Secrets[0].ExternalSecrets[0].TargetResourceVersion == "" || len(ev.Secrets[0].ExternalSecrets[0].Versions) == 0 ||
			ev.Secrets[0].ExternalSecrets[0].Versions[0].Key != "upstream" {
			t.Errorf("%s notification's Secrets %+v; the ExternalSecret's status: rotated %v, versions %v", ev.Type, ev.Secrets, es.Status.LastRotationTime, es.Status.Versions)
		}
	}
	if k := restartedEv.Secrets[0].Keys; len(k) != 1 || k[0] != "password" {
		t.Errorf("the restart's keys %v, want [password]", k)
	}
	if heldEv.Reason != restart.HeldWindow || !strings.Contains(heldEv.Message, "maintenance window") {
		t.Errorf("the hold's reason %q and message %q", heldEv.Reason, heldEv.Message)
	}
	eventually(t, wait, func() (bool, string) {
		s, tm := slack.all(), teams.all()
		return strings.Contains(s, "Deployment "+ns+"/web restarted") && strings.Contains(s, "Restart of Deployment "+ns+"/nightly held") &&
				strings.Contains(tm, "Deployment "+ns+"/web restarted") && strings.Contains(tm, "application/vnd.microsoft.card.adaptive"),
			fmt.Sprintf("Slack received %s; Teams received %s", s, tm)
	})
	hook.mu.Lock()
	refused := hook.refused
	hook.mu.Unlock()
	if refused != 0 {
		t.Errorf("the webhook refused %d requests whose signature or body it could not verify", refused)
	}
	for name, rc := range map[string]*notifyReceiver{"webhook": hook, "Slack": slack, "Teams": teams} {
		if all := rc.all(); strings.Contains(all, first) || strings.Contains(all, second) {
			t.Errorf("the %s receiver was sent a value: %s", name, all)
		}
	}
}

// TestHelmChartNotificationsRole: a namespaced install that does not
// serve its own namespace may get the notifications' Secret there, by
// name, and no other Secret of it; one that serves it needs no Role of
// its own for it.
func TestHelmChartNotificationsRole(t *testing.T) {
	parallel(t)
	helm := needHelm(t)
	ctx := context.Background()
	ns, served := newNamespace(t, nil), newNamespace(t, nil)
	values := filepath.Join(t.TempDir(), "values.yaml")
	must(t, os.WriteFile(values, []byte("namespaced:\n  enabled: true\n  namespaces: ["+served+"]\nnotifications:\n  secretName: receivers\n"), 0o600))
	r := helmTemplate(t, helm, "wwn", ns, values)
	d := r.deployment(t)
	assertArgsParse(t, d)
	if a := args(t, d); !slices.Contains(a, "--notify-secret=receivers") || !slices.Contains(a, "--notify-secret-namespace="+ns) {
		t.Errorf("args %v lack --notify-secret=receivers and --notify-secret-namespace=%s", a, ns)
	}
	var sa string
	for _, u := range r.objs {
		switch u.GetKind() {
		case "ServiceAccount":
			sa = u.GetName()
		case "Role", "RoleBinding":
		default:
			continue
		}
		must(t, ssa(ctx, u, false))
	}
	user := "system:serviceaccount:" + ns + ":" + sa
	if !allowed(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: "receivers"}) {
		t.Errorf("%s may not get the notifications' Secret %s/receivers", user, ns)
	}
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "get", Resource: "secrets", Name: "other"},
		{Namespace: ns, Verb: "list", Resource: "secrets"},
	} {
		if allowed(t, user, ra) {
			t.Errorf("%s may %s secrets %q in %s: want the notifications' Secret only", user, ra.Verb, ra.Name, ns)
		}
	}
	// Serving its own namespace, the install's Role there covers it.
	must(t, os.WriteFile(values, []byte("namespaced:\n  enabled: true\nnotifications:\n  secretName: receivers\n"), 0o600))
	for _, u := range helmTemplate(t, helm, "wwn", ns, values).find("Role") {
		if strings.HasSuffix(u.GetName(), "-notifications") {
			t.Errorf("Role %s rendered for an install that serves its own namespace", u.GetName())
		}
	}
}
