package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/watchword-dev/watchword/internal/cli"
)

// TestStatusCommandShowsWhatFails: `watchword status` lists the
// ExternalSecrets and PushSecrets of a namespace with the reason and
// message of what fails, and says that something fails; no value is
// printed.
func TestStatusCommandShowsWhatFails(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"password":"` + sentinel + `"}`})
	newES(t, ns, "good", "store", withData("password", "db", "password"))
	newES(t, ns, "bad", "store", withData("user", "db", "user"))
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"k": sentinel})
	newPush(t, ns, "push", "src", pushTo("copy"))
	waitReady(t, ns, "good")
	waitCondition(t, ns, "bad", "PropertyError")
	waitPushReady(t, ns, "push")

	rows, err := cli.Status(context.Background(), k8s, ns)
	must(t, err)
	byName := map[string]cli.StatusRow{}
	for _, r := range rows {
		byName[r.Kind+"/"+r.Name] = r
	}
	if len(rows) != 3 {
		t.Fatalf("rows %+v, want the 2 ExternalSecrets and the PushSecret", rows)
	}
	if r := byName["ExternalSecret/good"]; r.Failing() || r.LastSync.IsZero() {
		t.Errorf("good: %+v", r)
	}
	if r := byName["ExternalSecret/bad"]; !r.Failing() || r.Reason != "PropertyError" || !strings.Contains(r.Message, `property "user"`) {
		t.Errorf("bad: %+v", r)
	}
	if r := byName["PushSecret/push"]; r.Failing() || r.LastSync.IsZero() {
		t.Errorf("push: %+v", r)
	}
	var out bytes.Buffer
	must(t, cli.PrintStatus(&out, rows, time.Now()))
	if strings.Contains(out.String(), sentinel) {
		t.Errorf("the table shows a value:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "PropertyError") || !strings.Contains(out.String(), "NAMESPACE") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestRefreshCommandSyncsNowAndWaits: `watchword refresh` makes an
// ExternalSecret with an hourly refresh read its store now, waits for the
// outcome, and fails, naming the cause, for one that cannot sync.
func TestRefreshCommandSyncsNowAndWaits(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	src := newNamespace(t, nil)
	createSecret(t, ns, "reader-token", map[string]string{"token": readerToken(t, src)})
	createSecret(t, src, "upstream", map[string]string{"v": "old"})
	kubeStore(t, ns, "remote", src, "reader-token")
	newES(t, ns, "hourly", "remote", withData("v", "upstream", "v"))
	waitSecretData(t, ns, "hourly", map[string]string{"v": "old"})
	updateSecret(t, src, "upstream", func(s *corev1.Secret) { s.Data["v"] = []byte("new") })

	var out bytes.Buffer
	must(t, cli.Refresh(context.Background(), k8s, ns, []string{"hourly"}, wait, time.Now, &out))
	if s, err := getSecret(ns, "hourly"); err != nil || string(s.Data["v"]) != "new" {
		t.Errorf("after refresh the target holds %q (%v), want the new value", s.Data["v"], err)
	}
	if !strings.Contains(out.String(), "ExternalSecret "+ns+"/hourly synced") {
		t.Errorf("output %q", out.String())
	}

	newES(t, ns, "broken", "remote", withData("v", "upstream", "missing.property"))
	waitCondition(t, ns, "broken", "PropertyError")
	out.Reset()
	err := cli.Refresh(context.Background(), k8s, ns, nil, 30*time.Second, time.Now, &out)
	if err == nil || !strings.Contains(out.String(), "ExternalSecret "+ns+"/broken did not sync: PropertyError") {
		t.Errorf("refresh --all = %v, output %q: want the broken one named with its cause", err, out.String())
	}
}
