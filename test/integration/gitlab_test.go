package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/provider/gitlab"
	"github.com/watchword-dev/watchword/test/gitlabfake"
)

// The GitLab tests run against test/gitlabfake, a strict loopback fake of
// GitLab's REST API for CI/CD variables (GitLab cannot run here), reached
// by the operator's gitlab provider over TLS with the fake's CA as the
// store's caBundle.

var (
	gitlabOnce    sync.Once
	gitlabFake    *gitlabfake.Server
	gitlabMu      sync.Mutex
	gitlabProject = 1000
)

// needGitLab starts the fake once for the package, and makes a project of
// its own for the test, with a token that may read and write it.
func needGitLab(t *testing.T, ns string) (*gitlabfake.Server, int, string) {
	t.Helper()
	gitlabOnce.Do(func() { gitlabFake = gitlabfake.Start() })
	gitlabMu.Lock()
	gitlabProject++
	id := gitlabProject
	gitlabMu.Unlock()
	gitlabFake.AddProject(id, ns+"/app")
	token := fmt.Sprintf("glpat-%s-%d", ns, id)
	gitlabFake.AddToken(token, gitlabfake.Token{Name: ns, Write: true, Sees: []int{id}})
	return gitlabFake, id, token
}

func gitlabStore(t *testing.T, ns, name string, project int, change ...func(*v1alpha1.GitLabProvider)) {
	t.Helper()
	spec := &v1alpha1.GitLabProvider{URL: gitlabFake.URL(), ProjectID: fmt.Sprint(project), CABundle: gitlabFake.CAPEM(),
		Auth: v1alpha1.GitLabAuth{SecretRef: v1alpha1.GitLabSecretRef{AccessToken: v1alpha1.SecretKeySelector{Name: "gitlab-token", Key: "token"}}}}
	for _, c := range change {
		c(spec)
	}
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{GitLab: spec}}}))
}

func TestGitLabVariablesSyncAndARevokedTokenKeepsTheTarget(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake, project, token := needGitLab(t, ns)
	fake.SetProjectVariable(project, gitlabfake.Variable{Key: "DB_PASSWORD", Value: sentinel})
	fake.SetProjectVariable(project, gitlabfake.Variable{Key: "DB_PASSWORD", Value: "staging-only", EnvironmentScope: "staging"})
	fake.SetProjectVariable(project, gitlabfake.Variable{Key: "APP_SETTINGS", Value: `{"mode":"blue","replicas":"3"}`, EnvironmentScope: "production"})
	createSecret(t, ns, "gitlab-token", map[string]string{"token": token})
	gitlabStore(t, ns, "gitlab", project, func(s *v1alpha1.GitLabProvider) { s.Environment = "production" })
	newES(t, ns, "es", "gitlab", withData("password", "DB_PASSWORD", ""), withData("mode", "APP_SETTINGS", "mode"))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "mode": "blue"})
	es := waitReady(t, ns, "es")
	if v := versionOf(es, "DB_PASSWORD"); v == "" || strings.Contains(v, sentinel) {
		t.Errorf("status version of DB_PASSWORD %q; want a digest", v)
	}

	// The token is revoked while the ExternalSecret runs: the condition
	// says the token was refused, and the target keeps what it held.
	fake.Revoke(token)
	fake.SetProjectVariable(project, gitlabfake.Variable{Key: "APP_SETTINGS", Value: `{"mode":"green"}`, EnvironmentScope: "production"})
	forceSync(t, ns, "es")
	es = waitCondition(t, ns, "es", "PermissionDenied", "HTTP 401", `Secret "`+ns+`/gitlab-token"`, "revoked")
	if msg := readyCond(es).Message; strings.Contains(msg, token) || strings.Contains(msg, sentinel) {
		t.Error("the condition holds the token or a value")
	}
	consistently(t, 2*wait/10, func() (bool, string) {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "es"}, &s); err != nil {
			return false, err.Error()
		}
		return string(s.Data["password"]) == sentinel && string(s.Data["mode"]) == "blue", "the target changed"
	})

	// A new token in the Secret rebuilds the client, and the sync resumes.
	fresh := token + "-rotated"
	fake.AddToken(fresh, gitlabfake.Token{Name: ns, Write: true, Sees: []int{project}})
	updateSecret(t, ns, "gitlab-token", func(s *corev1.Secret) { s.Data["token"] = []byte(fresh) })
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "mode": "green"})
}

func TestGitLabPushSecretWritesWithTheMarkerInTheDescription(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fake, project, token := needGitLab(t, ns)
	createSecret(t, ns, "gitlab-token", map[string]string{"token": token})
	gitlabStore(t, ns, "gitlab", project)
	fake.SetProjectVariable(project, gitlabfake.Variable{Key: "FOREIGN", Value: "theirs", Description: "set by hand"})
	createSecret(t, ns, "src", map[string]string{"password": sentinel})
	via := viaStore("SecretStore", "gitlab")
	newPush(t, ns, "p", "src", pushKey("password", "db-password"), pushTo("PUBLISHED", via))
	ps := waitPushReady(t, ns, "p")
	owner := "PushSecret/" + ns + "/p/" + string(ps.UID)
	eventually(t, wait, func() (bool, string) {
		v, found := fake.ProjectVariable(project, "PUBLISHED", "*")
		return found && v.Value == `{"db-password":"`+sentinel+`"}` && v.Description == gitlab.OwnerPrefix+owner && v.Raw && !v.Masked,
			fmt.Sprintf("found %v, description %q", found, v.Description)
	})

	// A variable without the marker is refused and left as it is.
	updatePush(t, ns, "p", func(ps *v1alpha1.PushSecret) {
		ps.Spec.Destinations = append(ps.Spec.Destinations, v1alpha1.PushSecretDestination{Name: "FOREIGN", ConfigRef: &v1alpha1.StoreRef{Name: "gitlab"}})
	})
	waitPushCondition(t, ns, "p", "NotOwned", `"FOREIGN"`, gitlab.OwnerPrefix, "1 of 2 destinations published")
	if v, _ := fake.ProjectVariable(project, "FOREIGN", "*"); v.Value != "theirs" || v.Description != "set by hand" {
		t.Error("an unmarked GitLab variable was written over")
	}

	// Deleting the PushSecret deletes what it owns, and only that.
	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, ps)
	if _, found := fake.ProjectVariable(project, "PUBLISHED", "*"); found {
		t.Error("the published GitLab variable is still there")
	}
	if v, _ := fake.ProjectVariable(project, "FOREIGN", "*"); v.Value != "theirs" {
		t.Error("an unmarked GitLab variable was deleted")
	}
}
