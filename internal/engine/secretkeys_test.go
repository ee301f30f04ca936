package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// TestSecretKeysListTheObjectsNotMarkedNotSecret: a rendered result names
// the remote keys whose objects the store did not mark as not secret, once
// each and sorted, whatever entry or version read them.
func TestSecretKeysListTheObjectsNotMarkedNotSecret(t *testing.T) {
	spec := &v1alpha1.ExternalSecretSpec{
		Data: []v1alpha1.ExternalSecretData{
			{SecretKey: "level", RemoteRef: v1alpha1.RemoteReference{Key: "level"}},
			{SecretKey: "token", RemoteRef: v1alpha1.RemoteReference{Key: "token"}},
			{SecretKey: "old", RemoteRef: v1alpha1.RemoteReference{Key: "token", Version: "1"}},
		},
		DataFrom: []v1alpha1.ExternalSecretDataFrom{{RemoteRef: &v1alpha1.RemoteReference{Key: "db"}}},
	}
	objs := map[Ref]Object{
		{Key: "level"}:               {Value: []byte("debug"), NotSecret: true},
		{Key: "token"}:               {Value: []byte("t2")},
		{Key: "token", Version: "1"}: {Value: []byte("t1"), Version: "1"},
		{Key: "db"}:                  {Fields: map[string][]byte{"user": []byte("u")}},
	}
	res, err := Render(spec, objs, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db", "token"}; !slices.Equal(res.SecretKeys, want) {
		t.Errorf("SecretKeys = %v, want %v", res.SecretKeys, want)
	}
	for ref := range objs {
		o := objs[ref]
		o.NotSecret = true
		objs[ref] = o
	}
	if res, err = Render(spec, objs, nil, time.Now()); err != nil || len(res.SecretKeys) != 0 {
		t.Errorf("every object marked: SecretKeys = %v, err %v", res.SecretKeys, err)
	}
}
