package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/internal/cli"
)

// TestStatusCommandShowsWhatFails: `watchword status` lists the
// ExternalSecrets and PushSecrets of a namespace with the reason and
// message of what fails, and says that something fails; no value is
// printed.
func TestStatusCommandShowsWhatFails(t *testing.T) {
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
