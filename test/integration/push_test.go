package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	kubeprovider "github.com/watchword-dev/watchword/internal/provider/kubernetes"
)

// publisherStore creates, in ns, a kubernetes SecretStore named name whose
// service account may read, create, update and delete Secrets of remoteNS.
func publisherStore(t *testing.T, ns, name, remoteNS string) {
	t.Helper()
	ctx := context.Background()
	sa := "publisher-" + name
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))
	must(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}}}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: remoteNS, Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}))
	exp := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	must(t, err)
	createSecret(t, ns, sa+"-token", map[string]string{"token": tr.Status.Token})
	kubeStore(t, ns, name, remoteNS, sa+"-token")
}

type pushOpt func(*v1alpha1.PushSecret)

func pushTo(name string, change ...func(*v1alpha1.PushSecretDestination)) pushOpt {
	return func(ps *v1alpha1.PushSecret) {
		d := v1alpha1.PushSecretDestination{Name: name}
		for _, c := range change {
			c(&d)
		}
		ps.Spec.Destinations = append(ps.Spec.Destinations, d)
	}
}

func viaStore(kind, name string) func(*v1alpha1.PushSecretDestination) {
	return func(d *v1alpha1.PushSecretDestination) { d.ConfigRef = &v1alpha1.StoreRef{Kind: kind, Name: name} }
}

func pushKey(secretKey, remoteKey string) pushOpt {
	return func(ps *v1alpha1.PushSecret) {
		ps.Spec.Data = append(ps.Spec.Data, v1alpha1.PushSecretData{SecretKey: secretKey, RemoteKey: remoteKey})
	}
}

func pushPolicy(p v1alpha1.DeletionPolicy) pushOpt {
	return func(ps *v1alpha1.PushSecret) { ps.Spec.DeletionPolicy = p }
}

func pushRefresh(d time.Duration) pushOpt {
	return func(ps *v1alpha1.PushSecret) { ps.Spec.RefreshInterval = &metav1.Duration{Duration: d} }
}

func newPush(t *testing.T, ns, name, secretName string, opts ...pushOpt) *v1alpha1.PushSecret {
	t.Helper()
	ps := &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.PushSecretSpec{SecretName: secretName}}
	for _, o := range opts {
		o(ps)
	}
	must(t, k8s.Create(context.Background(), ps))
	return ps
}

func getPush(t *testing.T, ns, name string) *v1alpha1.PushSecret {
	t.Helper()
	var ps v1alpha1.PushSecret
	must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ps))
	return &ps
}

func updatePush(t *testing.T, ns, name string, change func(*v1alpha1.PushSecret)) {
	t.Helper()
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, name)
		change(ps)
		if err := k8s.Update(context.Background(), ps); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func pushReady(ps *v1alpha1.PushSecret) (*metav1.Condition, string) {
	for i := range ps.Status.Conditions {
		if c := &ps.Status.Conditions[i]; c.Type == v1alpha1.ConditionReady {
			return c, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
	}
	return nil, "no Ready condition"
}

// waitPushReady waits until the PushSecret is Ready for its current
// generation.
func waitPushReady(t *testing.T, ns, name string) *v1alpha1.PushSecret {
	t.Helper()
	var ps *v1alpha1.PushSecret
	eventually(t, wait, func() (bool, string) {
		ps = getPush(t, ns, name)
		c, why := pushReady(ps)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ps.Generation && ps.Status.ObservedGeneration == ps.Generation, why
	})
	return ps
}

// waitPushCondition waits until Ready is False for the current generation
// with the reason and a message holding every fragment.
func waitPushCondition(t *testing.T, ns, name, reason string, fragments ...string) *v1alpha1.PushSecret {
	t.Helper()
	var ps *v1alpha1.PushSecret
	eventually(t, wait, func() (bool, string) {
		ps = getPush(t, ns, name)
		c, why := pushReady(ps)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || c.ObservedGeneration != ps.Generation {
			return false, why
		}
		for _, f := range fragments {
			if !strings.Contains(c.Message, f) {
				return false, fmt.Sprintf("message %q lacks %q", c.Message, f)
			}
		}
		return true, ""
	})
	return ps
}

// waitEvent waits for an event of the object with the reason and a message
// holding fragment.
func waitEvent(t *testing.T, ns, object, reason, fragment string) {
	t.Helper()
	waitEventWithin(t, wait, ns, object, reason, fragment)
}

// waitEventWithin is waitEvent with a deadline of d, for an event that
// comes only after other work (a rollout, a debounce) on a loaded machine.
func waitEventWithin(t *testing.T, d time.Duration, ns, object, reason, fragment string) {
	t.Helper()
	eventually(t, d, func() (bool, string) {
		var evs corev1.EventList
		must(t, k8s.List(context.Background(), &evs, client.InNamespace(ns)))
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == object && e.Reason == reason && strings.Contains(e.Message, fragment) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no event %s of %s with %q among %d", reason, object, fragment, len(evs.Items))
	})
}

func TestPushPublishesAndFollowsTheSource(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "db", map[string]string{"password": sentinel, "user": "app", "unpublished": "x"})
	newPush(t, ns, "db", "db", pushKey("password", ""), pushKey("user", "username"),
		pushTo("app-db", func(d *v1alpha1.PushSecretDestination) {
			d.Metadata = v1alpha1.PushSecretMetadata{Labels: map[string]string{"team": "a"}, Type: "kubernetes.io/basic-auth"}
		}))
	ps := waitPushReady(t, ns, "db")
	got := waitSecretData(t, remote, "app-db", map[string]string{"password": sentinel, "username": "app"})
	if want := "PushSecret/" + ns + "/db/" + string(ps.UID); got.Annotations[kubeprovider.PublisherAnnotation] != want {
		t.Errorf("marker %q, want %q", got.Annotations[kubeprovider.PublisherAnnotation], want)
	}
	if got.Labels[kubeprovider.PublishedLabel] != "true" || got.Labels["team"] != "a" || got.Type != "kubernetes.io/basic-auth" {
		t.Errorf("published Secret has labels %v and type %s", got.Labels, got.Type)
	}
	if len(ps.Status.Destinations) != 1 {
		t.Fatalf("status destinations: %+v", ps.Status.Destinations)
	}
	d := ps.Status.Destinations[0]
	if d.State != v1alpha1.PushPublished || d.StoreKind != "SecretStore" || d.StoreName != "default" || d.Version != got.ResourceVersion ||
		!strings.HasPrefix(d.DataHash, "hmac-sha256:") || d.PublishedTime == nil {
		t.Errorf("destination status %+v (remote resourceVersion %s)", d, got.ResourceVersion)
	}
	waitEvent(t, ns, "db", "Published", `published keys password, username to remote secret "app-db" of SecretStore`)

	// A reconcile that leaves the published data as it is writes nothing:
	// the new generation's status shows the reconcile ran.
	written := got.ResourceVersion
	unwritten := func() (bool, string) {
		s, err := getSecret(remote, "app-db")
		if err != nil {
			return false, err.Error()
		}
		return s.ResourceVersion == written, fmt.Sprintf("the remote Secret was written again (resourceVersion %s, was %s) though its data did not change", s.ResourceVersion, written)
	}
	updatePush(t, ns, "db", func(ps *v1alpha1.PushSecret) { ps.Spec.RefreshInterval = &metav1.Duration{Duration: 2 * time.Hour} })
	waitPushReady(t, ns, "db")
	if ok, why := unwritten(); !ok {
		t.Error(why)
	}
	// Nor does a change of a key that is not published.
	updateSecret(t, ns, "db", func(s *corev1.Secret) { s.Data["unpublished"] = []byte("y") })
	consistently(t, 2*time.Second, unwritten)

	// An edit of the source reaches the destination at once.
	updateSecret(t, ns, "db", func(s *corev1.Secret) { s.Data["password"] = []byte("rotated") })
	waitSecretData(t, remote, "app-db", map[string]string{"password": "rotated", "username": "app"})
	eventually(t, wait, func() (bool, string) {
		ps := getPush(t, ns, "db")
		s, _ := getSecret(remote, "app-db")
		return len(ps.Status.Destinations) == 1 && ps.Status.Destinations[0].Version == s.ResourceVersion, "status does not show the new version"
	})
}

func TestPushRepairsDriftOnItsInterval(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushRefresh(time.Second), pushTo("copy"))
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "copy", map[string]string{"k": "v"})
	updateSecret(t, remote, "copy", func(s *corev1.Secret) { s.Data["k"] = []byte("tampered") })
	waitSecretData(t, remote, "copy", map[string]string{"k": "v"})
	waitEvent(t, ns, "p", "DriftRepaired", `remote secret "copy" of SecretStore`)
}

func TestPushRefusesAForeignSecretUntilAdopted(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	must(t, k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "taken",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "helm"}}, StringData: map[string]string{"k": "theirs"}}))
	createSecret(t, ns, "src", map[string]string{"k": sentinel})
	newPush(t, ns, "p", "src", pushTo("taken"))
	ps := waitPushCondition(t, ns, "p", "NotOwned", `destination "taken" of SecretStore "`+ns+`/default"`,
		"Secret "+remote+`/taken exists and carries no Watchword publisher marker (it is managed by "helm")`, "adopt: true")
	if c, _ := pushReady(ps); c == nil || strings.Contains(c.Message, "theirs") {
		t.Error("the refusal names a value")
	}
	if len(ps.Status.Destinations) != 1 || ps.Status.Destinations[0].State != v1alpha1.PushNotOwned {
		t.Errorf("destination status %+v", ps.Status.Destinations)
	}
	waitEvent(t, ns, "p", "NotOwned", `not published to remote secret "taken"`)
	waitSecretData(t, remote, "taken", map[string]string{"k": "theirs"})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) { ps.Spec.Destinations[0].Adopt = true })
	waitPushReady(t, ns, "p")
	s := waitSecretData(t, remote, "taken", map[string]string{"k": sentinel})
	if s.Annotations[kubeprovider.PublisherAnnotation] == "" || s.Labels["app.kubernetes.io/managed-by"] != "helm" {
		t.Errorf("adopted Secret has annotations %v and labels %v", s.Annotations, s.Labels)
	}
}

func TestPushDeletionPolicies(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "deletes", "src", pushTo("deleted"))
	newPush(t, ns, "retains", "src", pushPolicy(v1alpha1.DeletionPolicyRetain), pushTo("retained"))
	waitPushReady(t, ns, "deletes")
	waitPushReady(t, ns, "retains")
	waitSecretData(t, remote, "deleted", map[string]string{"k": "v"})
	waitSecretData(t, remote, "retained", map[string]string{"k": "v"})
	for _, name := range []string{"deletes", "retains"} {
		ps := getPush(t, ns, name)
		must(t, k8s.Delete(context.Background(), ps))
		waitGone(t, ps)
	}
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "deleted"}})
	waitEvent(t, ns, "deletes", "Unpublished", `deleted remote secret "deleted" of SecretStore`)
	waitSecretData(t, remote, "retained", map[string]string{"k": "v"})
}

func TestPushRenamedDestinationUnpublishesOnlyWhatItOwns(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, remote, "foreign", map[string]string{"k": "theirs"})
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushTo("old"), pushTo("foreign"))
	waitPushCondition(t, ns, "p", "NotOwned", "1 of 2 destinations published")
	waitSecretData(t, remote, "old", map[string]string{"k": "v"})
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = []v1alpha1.PushSecretDestination{{Name: "new"}, {Name: "other"}}
	})
	ps := waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "new", map[string]string{"k": "v"})
	waitSecretData(t, remote, "other", map[string]string{"k": "v"})
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "old"}})
	waitSecretData(t, remote, "foreign", map[string]string{"k": "theirs"})
	if len(ps.Status.Destinations) != 2 {
		t.Errorf("status keeps %d destinations, want the 2 of the spec: %+v", len(ps.Status.Destinations), ps.Status.Destinations)
	}

	// Under Retain a rename leaves the old Secret.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.DeletionPolicy = v1alpha1.DeletionPolicyRetain
		ps.Spec.Destinations = []v1alpha1.PushSecretDestination{{Name: "newer"}, {Name: "other"}}
	})
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "newer", map[string]string{"k": "v"})
	waitEvent(t, ns, "p", "Retained", `destination "new" of SecretStore`)
	waitSecretData(t, remote, "new", map[string]string{"k": "v"})
}

func TestPushBadInputDeletesNothing(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "src", map[string]string{"k": sentinel})
	newPush(t, ns, "p", "src", pushTo("copy"))
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "copy", map[string]string{"k": sentinel})

	// A key that the source lacks: named, and nothing deleted.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) { ps.Spec.Data = []v1alpha1.PushSecretData{{SecretKey: "absent"}} })
	waitPushCondition(t, ns, "p", "SourceKeyMissing", `Secret "src" has no key "absent"`, "the Secret has keys k")
	waitSecretData(t, remote, "copy", map[string]string{"k": sentinel})

	// The store goes: a specific condition, and the remote Secret stays.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) { ps.Spec.Data = nil })
	waitPushReady(t, ns, "p")
	must(t, k8s.Delete(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	waitPushCondition(t, ns, "p", "StoreNotFound", `SecretStore "default" not found in namespace "`+ns+`"`)
	waitSecretData(t, remote, "copy", map[string]string{"k": sentinel})

	// Its source goes: the same, until it comes back.
	must(t, k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}}))
	waitPushCondition(t, ns, "p", "SourceMissing", `Secret "src" to publish does not exist`)
	waitSecretData(t, remote, "copy", map[string]string{"k": sentinel})
	kubeStore(t, ns, "default", remote, "publisher-default-token")
	createSecret(t, ns, "src", map[string]string{"k": "back"})
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "copy", map[string]string{"k": "back"})
}

func TestPushToAStoreThatCannotHoldIt(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	fakeStore(t, ns, "read-only")
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	cases := []struct {
		name, reason string
		dest         pushOpt
		fragments    []string
	}{
		{name: "read-only", reason: "NotSupported", dest: pushTo("x", viaStore("SecretStore", "read-only")),
			fragments: []string{`destination "x" of SecretStore "` + ns + `/read-only"`, `the "fake" provider does not have the write capability (it has read,list)`}},
		{name: "missing-cluster-store", reason: "StoreNotFound", dest: pushTo("x", viaStore("ClusterSecretStore", "nowhere-"+ns)),
			fragments: []string{`ClusterSecretStore "nowhere-` + ns + `" not found; create it or fix the destination's configRef`}},
		{name: "missing-store", reason: "StoreNotFound", dest: pushTo("x", viaStore("SecretStore", "nowhere")),
			fragments: []string{`SecretStore "nowhere" not found`}},
		{name: "bad-name", reason: "RemoteNameInvalid", dest: pushTo("Not_A_Secret_Name"),
			fragments: []string{`"Not_A_Secret_Name" cannot name a Secret in namespace "` + remote + `"`}},
		{name: "missing-source", reason: "SourceMissing", dest: pushTo("x"),
			fragments: []string{`Secret "absent" to publish does not exist`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "src"
			if tc.name == "missing-source" {
				src = "absent"
			}
			newPush(t, ns, tc.name, src, tc.dest)
			ps := waitPushCondition(t, ns, tc.name, tc.reason, tc.fragments...)
			if !hasStalled(ps) {
				t.Errorf("no Stalled condition: %+v", ps.Status.Conditions)
			}
		})
	}
	var list corev1.SecretList
	must(t, k8s.List(context.Background(), &list, client.InNamespace(remote)))
	for _, s := range list.Items {
		if s.Annotations[kubeprovider.PublisherAnnotation] != "" {
			t.Errorf("Secret %s was published", s.Name)
		}
	}
}

func hasStalled(ps *v1alpha1.PushSecret) bool {
	for _, c := range ps.Status.Conditions {
		if c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestPushTemplateShapesWhatIsPublished: a template renders the published
// fields from the selected keys; a broken template is a TemplateError that
// leaves what was published.
func TestPushTemplateShapesWhatIsPublished(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "default", remote)
	createSecret(t, ns, "db", map[string]string{"user": "app", "password": sentinel, "unused": "x"})
	newPush(t, ns, "p", "db", pushKey("user", ""), pushKey("password", "pass"), pushTo("dsn"), func(ps *v1alpha1.PushSecret) {
		ps.Spec.Template = &v1alpha1.PushSecretTemplate{Data: map[string]string{"dsn": "postgres://{{ .data.user }}:{{ .data.pass }}@db:5432/app"}}
	})
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "dsn", map[string]string{"dsn": "postgres://app:" + sentinel + "@db:5432/app"})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Template.MergePolicy = v1alpha1.TemplateMergeMerge
	})
	waitSecretData(t, remote, "dsn", map[string]string{"dsn": "postgres://app:" + sentinel + "@db:5432/app", "user": "app", "pass": sentinel})

	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Template.Data["dsn"] = "{{ .data.pass | nosuchfunc }}"
	})
	waitPushCondition(t, ns, "p", "TemplateError", "spec.template")
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(remote, "dsn")
		return err == nil && string(s.Data["user"]) == "app" && len(s.Data) == 3, "a template error changed what was published"
	})
}

// TestPushStoreSwappedDeletesNothingBySurprise: a destination moved to
// another store that points at the same place keeps its remote Secret (the
// same object, never deleted and created again); moved to a store that does
// not exist, nothing is deleted until the move can be published; moved to
// a store elsewhere, the old copy goes (deletionPolicy Delete).
func TestPushStoreSwappedDeletesNothingBySurprise(t *testing.T) {
	parallel(t)
	ns, remote, elsewhere := newNamespace(t, nil), newNamespace(t, nil), newNamespace(t, nil)
	publisherStore(t, ns, "a", remote)
	publisherStore(t, ns, "same-place", remote)
	publisherStore(t, ns, "elsewhere", elsewhere)
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushTo("d", viaStore("SecretStore", "a")))
	waitPushReady(t, ns, "p")
	first := waitSecretData(t, remote, "d", map[string]string{"k": "v"})
	moveTo := func(store string) {
		updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
			ps.Spec.Destinations[0].ConfigRef = &v1alpha1.StoreRef{Kind: "SecretStore", Name: store}
		})
	}

	moveTo("same-place")
	waitPushReady(t, ns, "p")
	waitEvent(t, ns, "p", "Retained", `it is the remote secret that destination "d" has just published`)
	if s, err := getSecret(remote, "d"); err != nil || s.UID != first.UID {
		t.Fatalf("the remote Secret was deleted (and perhaps created again) when its store was swapped for one pointing at the same place: %v", err)
	}

	moveTo("nowhere")
	waitPushCondition(t, ns, "p", "StoreNotFound")
	consistently(t, 2*time.Second, func() (bool, string) {
		s, err := getSecret(remote, "d")
		return err == nil && s.UID == first.UID, "a move to a store that does not exist deleted the published Secret"
	})
	eventually(t, wait, func() (bool, string) {
		for _, d := range getPush(t, ns, "p").Status.Destinations {
			if d.StoreName == "same-place" {
				return d.State == v1alpha1.PushUnpublishing && d.Reason == "UnpublishDeferred", fmt.Sprintf("%+v", d)
			}
		}
		return false, "the old destination is not kept in the status"
	})

	moveTo("elsewhere")
	waitPushReady(t, ns, "p")
	waitSecretData(t, elsewhere, "d", map[string]string{"k": "v"})
	waitGone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "d"}})
}

// TestPushServedByItsStoresClass: a PushSecret whose store belongs to a
// controller class is left alone by the default instance and published by
// the instance of that class.
func TestPushServedByItsStoresClass(t *testing.T) {
	parallel(t)
	ns, remote := newNamespace(t, nil), newNamespace(t, nil)
	class := "push-" + ns
	publisherStore(t, ns, "default", remote)
	updateStore(t, ns, "default", func(s *v1alpha1.SecretStore) { s.Spec.Controller = class })
	eventually(t, wait, func() (bool, string) {
		var s v1alpha1.SecretStore
		err := opCache.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "default"}, &s)
		return err == nil && s.Spec.Controller == class, "the operator's cache does not show the store's class yet"
	})
	createSecret(t, ns, "src", map[string]string{"k": "v"})
	newPush(t, ns, "p", "src", pushTo("d"))
	consistently(t, 2*time.Second, func() (bool, string) {
		_, err := getSecret(remote, "d")
		return apierrors.IsNotFound(err) && len(getPush(t, ns, "p").Status.Conditions) == 0,
			"the default instance served a PushSecret of another class's store"
	})
	startReplica(t, ns, class, 0)
	waitPushReady(t, ns, "p")
	waitSecretData(t, remote, "d", map[string]string{"k": "v"})
}
