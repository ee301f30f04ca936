package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/keymanager/v1/secrets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/test/barbicanserver"
)

// barbicanClient is a key-manager client of the server's test project, to
// write and read secrets out of band as a person with the OpenStack CLI
// would: token-less, or with the test user's application credential.
func barbicanClient(t *testing.T, s *barbicanserver.Server) *gophercloud.ServiceClient {
	t.Helper()
	if k := s.Keystone; k != nil {
		p, err := openstack.AuthenticatedClient(context.Background(), gophercloud.AuthOptions{
			IdentityEndpoint: k.AuthURL, ApplicationCredentialID: k.AppCredID, ApplicationCredentialSecret: k.AppCredSecret})
		must(t, err)
		c, err := openstack.NewKeyManagerV1(p, gophercloud.EndpointOpts{})
		must(t, err)
		return c
	}
	return &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{},
		Endpoint: s.URL + "/v1/", ResourceBase: s.URL + "/v1/", MoreHeaders: map[string]string{"X-Project-Id": s.ProjectID}}
}

// barbicanPut creates a secret with a text payload, as someone other than
// Watchword would, and returns its UUID.
func barbicanPut(t *testing.T, c *gophercloud.ServiceClient, name, payload string) string {
	t.Helper()
	sec, err := secrets.Create(context.Background(), c, secrets.CreateOpts{
		Name: name, Payload: payload, PayloadContentType: "text/plain", SecretType: secrets.OpaqueSecret}).Extract()
	must(t, err)
	return sec.SecretRef[strings.LastIndex(sec.SecretRef, "/")+1:]
}

// barbicanNamed lists the secrets of exactly that name.
func barbicanNamed(t *testing.T, c *gophercloud.ServiceClient, name string) []secrets.Secret {
	t.Helper()
	pages, err := secrets.List(c, secrets.ListOpts{Name: name}).AllPages(context.Background())
	must(t, err)
	all, err := secrets.ExtractSecrets(pages)
	must(t, err)
	var out []secrets.Secret
	for _, s := range all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestBarbicanReadsByNameFollowsNewSecretsAndSurvivesAnOutage: an
// ExternalSecret reads properties of a JSON secret by name from a real,
// token-less Barbican, and another one all its members with dataFrom; a new secret of the name reaches the target; with
// Barbican stopped the target is kept and the condition says
// StoreUnavailable; once Barbican is back on the same port and data, the
// ExternalSecret is Ready again and follows the next new secret.
func TestBarbicanReadsByNameFollowsNewSecretsAndSurvivesAnOutage(t *testing.T) {
	parallel(t)
	s := barbicanserver.Start(t, barbicanserver.Options{})
	c := barbicanClient(t, s)
	ns := newNamespace(t, nil)
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "barbican"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Barbican: &v1alpha1.BarbicanProvider{
			Endpoint: s.URL, Auth: v1alpha1.BarbicanAuth{NoAuth: &v1alpha1.BarbicanNoAuth{ProjectID: s.ProjectID}}}}}}
	must(t, k8s.Create(context.Background(), store))
	first := barbicanPut(t, c, "app/db", `{"user":"app","password":"`+sentinel+`"}`)
	barbicanPut(t, c, "app/dbx", `{"user":"other","password":"other"}`) // a LIKE match, not the name
	newES(t, ns, "es", "barbican", withData("password", "app/db", "password"), withData("user", "app/db", "user"),
		withRefresh(2*time.Second))
	newES(t, ns, "all", "barbican", withDataFrom("app/db", ""))
	waitSecretData(t, ns, "es", map[string]string{"password": sentinel, "user": "app"})
	waitSecretData(t, ns, "all", map[string]string{"password": sentinel, "user": "app"})
	es := waitReady(t, ns, "es")
	if v := es.Status.Versions; len(v) != 1 || !strings.HasPrefix(v[0].Version, first+"@") {
		t.Errorf("status versions %+v: expected the secret's <uuid>@<created>", v)
	}

	second := barbicanPut(t, c, "app/db", `{"user":"app","password":"second"}`)
	waitSecretData(t, ns, "es", map[string]string{"password": "second", "user": "app"})
	eventually(t, wait, func() (bool, string) {
		v := getES(t, ns, "es").Status.Versions
		return len(v) == 1 && strings.HasPrefix(v[0].Version, second+"@"), fmt.Sprintf("versions %+v", v)
	})

	s.Stop()
	restarted := false
	defer func() {
		if !restarted {
			_ = s.Restart(context.Background())
		}
	}()
	forceSync(t, ns, "es")
	es = waitCondition(t, ns, "es", "StoreUnavailable", `Barbican secret "app/db"`)
	if es.Status.Phase != v1alpha1.PhaseFailing {
		t.Errorf("phase = %s", es.Status.Phase)
	}
	waitSecretData(t, ns, "es", map[string]string{"password": "second", "user": "app"})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, s.Restart(ctx))
	restarted = true
	eventually(t, 60*time.Second, func() (bool, string) {
		es := getES(t, ns, "es")
		c := readyCond(es)
		return c != nil && c.Status == metav1.ConditionTrue, describeES(es)
	})
	barbicanPut(t, c, "app/db", `{"user":"app","password":"third"}`)
	waitSecretData(t, ns, "es", map[string]string{"password": "third", "user": "app"})
}

// TestBarbicanPublishesBehindKeystone: a PushSecret publishes through a
// store that logs in to a real Keystone with an application credential
// from a Secret: the secret appears in Barbican with the ownership marker,
// an unmarked secret of another name is refused and left as it was, a
// second store logging in with a password reads it back, a
// changed source makes a new secret and removes the old one, and deleting
// the PushSecret removes what it published and nothing else.
func TestBarbicanPublishesBehindKeystone(t *testing.T) {
	parallel(t)
	s := barbicanserver.Start(t, barbicanserver.Options{Keystone: true})
	k := s.Keystone
	c := barbicanClient(t, s)
	ns := newNamespace(t, nil)
	createSecret(t, ns, "openstack", map[string]string{"secret": k.AppCredSecret})
	store := &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "barbican"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Barbican: &v1alpha1.BarbicanProvider{
			AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{ApplicationCredential: &v1alpha1.BarbicanApplicationCredential{
				ID: k.AppCredID, SecretRef: v1alpha1.SecretKeySelector{Name: "openstack", Key: "secret"}}}}}}}
	must(t, k8s.Create(context.Background(), store))
	foreign := barbicanPut(t, c, "team/foreign", "theirs")
	createSecret(t, ns, "src", map[string]string{"password": sentinel, "user": "app"})
	via := viaStore("SecretStore", "barbican")
	newPush(t, ns, "p", "src", pushTo("team/db", via), pushTo("team/foreign", via))
	waitPushCondition(t, ns, "p", "NotOwned", `Barbican secret "team/foreign"`, "no Watchword ownership marker")

	published := func() (string, map[string]string) {
		list := barbicanNamed(t, c, "team/db")
		if len(list) != 1 {
			return fmt.Sprintf("%d secrets", len(list)), nil
		}
		id := list[0].SecretRef[strings.LastIndex(list[0].SecretRef, "/")+1:]
		b, err := secrets.GetPayload(context.Background(), c, id, nil).Extract()
		must(t, err)
		var fields map[string]string
		must(t, json.Unmarshal(b, &fields))
		md, err := secrets.GetMetadata(context.Background(), c, id).Extract()
		must(t, err)
		if md["watchword-owner"] == "" {
			return "", nil
		}
		return id, fields
	}
	var firstID string
	eventually(t, wait, func() (bool, string) {
		id, f := published()
		firstID = id
		return f["password"] == sentinel && f["user"] == "app", "published: " + id
	})
	// A second store logs in with the user's password, the project by
	// name, and reads back what was published.
	createSecret(t, ns, "openstack-password", map[string]string{"password": k.Password})
	must(t, k8s.Create(context.Background(), &v1alpha1.SecretStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "barbican-password"},
		Spec: v1alpha1.SecretStoreSpec{SecretStoreProvider: v1alpha1.SecretStoreProvider{Barbican: &v1alpha1.BarbicanProvider{
			AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{
				Username: k.Username, ProjectName: k.ProjectName,
				PasswordSecretRef: v1alpha1.SecretKeySelector{Name: "openstack-password", Key: "password"}}}}}}}))
	newES(t, ns, "read-back", "barbican-password", withData("user", "team/db", "user"))
	waitSecretData(t, ns, "read-back", map[string]string{"user": "app"})
	if list := barbicanNamed(t, c, "team/foreign"); len(list) != 1 || !strings.HasSuffix(list[0].SecretRef, foreign) {
		t.Errorf("the unmarked secret was changed: %d secrets of its name", len(list))
	}

	updateSecret(t, ns, "src", func(sec *corev1.Secret) { sec.Data["password"] = []byte("rotated") })
	eventually(t, wait, func() (bool, string) {
		id, f := published()
		return id != firstID && f["password"] == "rotated", "published: " + id
	})

	must(t, k8s.Delete(context.Background(), getPush(t, ns, "p")))
	waitGone(t, &v1alpha1.PushSecret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}})
	if n := len(barbicanNamed(t, c, "team/db")); n != 0 {
		t.Errorf("%d published secrets are left after the PushSecret was deleted", n)
	}
	if n := len(barbicanNamed(t, c, "team/foreign")); n != 1 {
		t.Errorf("the unmarked secret was deleted")
	}
}
