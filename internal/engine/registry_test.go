package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// TestRegistryLease: a registryToken entry is held as a lease that is
// replaced renewBefore its expiry (by default an hour for ECR, ten
// minutes for GAR), retained on
// delete, under a path that names the registry.
func TestRegistryLease(t *testing.T) {
	spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RegistryToken: &v1alpha1.RegistryToken{
		Registry: v1alpha1.RegistryECR, RegistryID: "444455556666"}}}}
	v, req := DynamicEntry(spec)
	if v == nil || req == nil || req.Registry != v1alpha1.RegistryECR || req.RegistryID != "444455556666" || req.Path != "" {
		t.Fatalf("DynamicEntry = %+v, %+v", v, req)
	}
	if v.Path != "registry:ECR:444455556666" || v.RenewBefore.Duration != time.Hour || v.DeletionPolicy != v1alpha1.VaultLeaseRetain {
		t.Errorf("lease entry = %+v", v)
	}
	// A 12-hour token is kept for 11 hours (less its spread), then
	// replaced: it cannot be renewed.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &v1alpha1.VaultLeaseStatus{ID: "ecr:h@x", Path: v.Path, IssueTime: metav1.NewTime(t0),
		TTL: metav1.Duration{Duration: 12 * time.Hour}, Duration: metav1.Duration{Duration: 12 * time.Hour}, ExpiryTime: metav1.NewTime(t0.Add(12 * time.Hour))}
	due := t0.Add(11 * time.Hour).Add(-LeaseSpread(l.ID, 11*time.Hour))
	if a, at := NextLeaseActionFor(l, v, t0.Add(10*time.Hour)); a != LeaseKeep || !at.Equal(due) {
		t.Errorf("at 10h: %v until %v, want keep until %v", a, at, due)
	}
	if a, _ := NextLeaseActionFor(l, v, t0.Add(11*time.Hour)); a != LeaseRotate {
		t.Errorf("at 11h: %v, want a new token", a)
	}
	gar := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RegistryToken: &v1alpha1.RegistryToken{
		Registry: v1alpha1.RegistryGAR, Host: "europe-docker.pkg.dev"}}}}
	if g, greq := DynamicEntry(gar); g.Path != "registry:GAR:europe-docker.pkg.dev" || g.RenewBefore.Duration != 10*time.Minute ||
		greq.RegistryHost != "europe-docker.pkg.dev" {
		t.Errorf("GAR lease entry = %+v, request %+v; want its host in the path and the request, renewed 10m before expiry", g, greq)
	}
	spec.DataFrom[0].RegistryToken.RenewBefore = &metav1.Duration{Duration: 3 * time.Hour}
	if v, _ = DynamicEntry(spec); v.RenewBefore.Duration != 3*time.Hour {
		t.Errorf("renewBefore 3h: %v", v.RenewBefore)
	}
	vd := &v1alpha1.VaultDynamicSecret{Path: "database/creds/app", Method: "POST"}
	if v, req = DynamicEntry(&v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{VaultDynamic: vd}}}); v != vd || req.Path != vd.Path || req.Registry != "" {
		t.Errorf("vaultDynamic: %+v %+v", v, req)
	}
}

// TestRegistryTarget: a registryToken target is a dockerconfigjson Secret
// with the one key .dockerconfigjson; a template sees the other fields
// and renders the data itself.
func TestRegistryTarget(t *testing.T) {
	tok := &v1alpha1.RegistryToken{Registry: v1alpha1.RegistryECR}
	obj := Object{Version: "2026-01-01T12:00:00Z", Fields: map[string][]byte{DockerConfigJSONKey: []byte(`{"auths":{}}`),
		"username": []byte("AWS"), "password": []byte("pw"), "proxy_endpoint": []byte("https://h"), "expires_at": []byte("1767268800")}}
	objs := map[Ref]Object{LeaseRef(RegistryLease(tok)): obj}
	spec := &v1alpha1.ExternalSecretSpec{DataFrom: []v1alpha1.ExternalSecretDataFrom{{RegistryToken: tok}}}
	res, err := RenderFound(spec, objs, nil, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Type != DockerConfigJSONType || len(res.Data) != 1 || string(res.Data[DockerConfigJSONKey]) != `{"auths":{}}` {
		t.Errorf("untemplated: type %q, keys %d", res.Type, len(res.Data))
	}
	spec.Target.Template = &v1alpha1.ExternalSecretTemplate{Data: map[string]string{"login": "{{ .username }}@{{ .proxy_endpoint }}"}}
	if res, err = RenderFound(spec, objs, nil, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if res.Type != DockerConfigJSONType || len(res.Data) != 1 || string(res.Data["login"]) != "AWS@https://h" {
		t.Errorf("templated: type %q, data keys %d", res.Type, len(res.Data))
	}
	if _, err = RenderFound(spec, map[Ref]Object{}, nil, nil, time.Time{}); err == nil {
		t.Error("a token that was not issued rendered")
	}
}
