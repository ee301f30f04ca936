package barbican

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/engine"
	"github.com/watchword-dev/watchword/test/barbicanserver"
)

// TestKeystoneLogins logs in to a real Keystone in each supported way,
// finds Barbican in its catalog (or at the given endpoint), and writes and
// reads a secret of the test project; wrong credentials, a project the
// user has no role on and a region without Barbican are refused with the
// right class, and no credential appears in an error.
func TestKeystoneLogins(t *testing.T) {
	s := barbicanserver.Start(t, barbicanserver.Options{Keystone: true})
	k := s.Keystone
	ctx := context.Background()
	d := deps{"creds/appcred": k.AppCredSecret, "creds/password": k.Password + "\n", "creds/wrong": "not-the-password"}
	sel := func(key string) v1alpha1.SecretKeySelector {
		return v1alpha1.SecretKeySelector{Name: "creds", Key: key}
	}
	appCred := &v1alpha1.BarbicanApplicationCredential{ID: k.AppCredID, SecretRef: sel("appcred")}

	for name, spec := range map[string]*v1alpha1.BarbicanProvider{
		"application credential": {AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{ApplicationCredential: appCred}},
		"password, project by name": {AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{
			Username: k.Username, PasswordSecretRef: sel("password"), ProjectName: k.ProjectName}}},
		"password, project by ID": {AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{
			UserID: k.UserID, PasswordSecretRef: sel("password"), ProjectID: k.ProjectID}}},
		"application credential, explicit endpoint": {AuthURL: k.AuthURL, Endpoint: s.URL + "/v1", Auth: v1alpha1.BarbicanAuth{ApplicationCredential: appCred}},
	} {
		t.Run(name, func(t *testing.T) {
			ops, err := Factory{}.New(ctx, store(spec), d)
			if err != nil {
				t.Fatal(err)
			}
			if err = ops.Checker.Check(ctx); err != nil {
				t.Fatal(err)
			}
			key := "keystone/" + strings.ReplaceAll(name, " ", "-")
			owner := engine.Owner{ID: "PushSecret/ks/" + strings.ReplaceAll(name, " ", "-")}
			v, err := ops.Writer.PutSecret(ctx, key, engine.Publication{Fields: map[string][]byte{"token": []byte("t-" + name)}}, owner)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := ops.Reader.GetSecret(ctx, engine.Ref{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			if obj.Version != v || string(obj.Fields["token"]) != "t-"+name {
				t.Errorf("read back another version or value (%s, wrote %s)", obj.Version, v)
			}
		})
	}

	for name, c := range map[string]struct {
		spec  *v1alpha1.BarbicanProvider
		class error
	}{
		"wrong password": {&v1alpha1.BarbicanProvider{AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{
			Username: k.Username, PasswordSecretRef: sel("wrong"), ProjectName: k.ProjectName}}}, engine.ErrPermissionDenied},
		"wrong application credential secret": {&v1alpha1.BarbicanProvider{AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{
			ApplicationCredential: &v1alpha1.BarbicanApplicationCredential{ID: k.AppCredID, SecretRef: sel("wrong")}}}, engine.ErrPermissionDenied},
		"a project without a role": {&v1alpha1.BarbicanProvider{AuthURL: k.AuthURL, Auth: v1alpha1.BarbicanAuth{Password: &v1alpha1.BarbicanPasswordAuth{
			Username: k.Username, PasswordSecretRef: sel("password"), ProjectName: "admin"}}}, engine.ErrPermissionDenied},
		"a region without Barbican": {&v1alpha1.BarbicanProvider{AuthURL: k.AuthURL, Region: "elsewhere", Auth: v1alpha1.BarbicanAuth{ApplicationCredential: appCred}}, engine.ErrInvalidConfig},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.New(ctx, store(c.spec), d)
			if !errors.Is(err, c.class) {
				t.Fatalf("expected %v, got %v", c.class, err)
			}
			for _, secret := range []string{k.Password, k.AppCredSecret, "not-the-password"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a credential: %v", err)
				}
			}
			t.Logf("refused: %v", err)
		})
	}
}
