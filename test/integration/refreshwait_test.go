package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/cli"
	"github.com/watchword-dev/watchword/internal/conditions"
)

// TestRefreshEndsOnItsOwnFailure: `watchword refresh` of an ExternalSecret
// that was failing before ends its wait when its own request fails (the
// controller records the request's value in status.forceSyncFailedValue),
// naming the cause, long before its timeout.
func TestRefreshEndsOnItsOwnFailure(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "store", fakeEntry{key: "db", value: `{"user":"app"}`})
	newES(t, ns, "broken", "store", withData("password", "db", "password"))
	waitCondition(t, ns, "broken", "PropertyError")

	var out bytes.Buffer
	err := cli.Refresh(context.Background(), k8s, ns, []string{"broken"}, 10*time.Minute, time.Now, &out)
	if err == nil || !strings.Contains(out.String(), "ExternalSecret "+ns+"/broken did not sync: PropertyError") {
		t.Fatalf("refresh = %v, output %q: want the failure of this request, with its cause", err, out.String())
	}
	es := getES(t, ns, "broken")
	asked := es.Annotations[conditions.ForceSyncAnnotation]
	if asked == "" || es.Status.ForceSyncFailedValue != asked || es.Status.ForceSyncedValue == asked {
		t.Errorf("annotation %q, forceSyncFailedValue %q, forceSyncedValue %q: want the request recorded as failed",
			asked, es.Status.ForceSyncFailedValue, es.Status.ForceSyncedValue)
	}

	// A terminal failure, which waits for a change, answers the request
	// too: the new annotation value is such a change.
	newES(t, ns, "bad-template", "store", withData("user", "db", "user"), withTemplate(&v1alpha1.ExternalSecretTemplate{
		Data: map[string]string{"user": "{{ .user | nosuchfunc }}"}}))
	waitCondition(t, ns, "bad-template", "TemplateError")
	out.Reset()
	err = cli.Refresh(context.Background(), k8s, ns, []string{"bad-template"}, 10*time.Minute, time.Now, &out)
	if err == nil || !strings.Contains(out.String(), "ExternalSecret "+ns+"/bad-template did not sync: TemplateError") {
		t.Fatalf("refresh = %v, output %q: want the terminal failure of this request", err, out.String())
	}
}

// TestRefreshDoesNotEndOnAnOlderFailure: an ExternalSecret whose status
// shows a failure, and a failed force-sync of another value, is not
// taken as failed for a new request: the wait goes on to its timeout and
// says there was no outcome, and what failed before. No controller serves
// this ExternalSecret's store, so its status stays as written here.
func TestRefreshDoesNotEndOnAnOlderFailure(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unserved"},
		Spec: v1alpha1.SecretStoreSpec{Controller: "nobody", SecretStoreProvider: v1alpha1.SecretStoreProvider{Fake: &v1alpha1.FakeProvider{}}}}))
	newES(t, ns, "old-failure", "unserved", withData("password", "db", "password"))
	es := getES(t, ns, "old-failure")
	now := metav1.Now()
	es.Status.ForceSyncFailedValue = now.UTC().Format(time.RFC3339Nano)
	es.Status.Conditions = []v1alpha1.ExternalSecretCondition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "NotFound", Message: "key \"db\" not found", LastTransitionTime: now}}
	must(t, k8s.Status().Update(context.Background(), es))

	var out bytes.Buffer
	err := cli.Refresh(context.Background(), k8s, ns, []string{"old-failure"}, 3*time.Second, time.Now, &out)
	want := "ExternalSecret " + ns + "/old-failure did not sync: no outcome yet (still failing from before: NotFound"
	if err == nil || !strings.Contains(out.String(), want) {
		t.Errorf("refresh = %v, output %q: want %q", err, out.String(), want)
	}
}
