package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/conditions"
)

// ConfigMap targets (spec.target.kind: ConfigMap): written by the rules
// of an owned Secret target, and only with values the store marks as not
// secret unless the ExternalSecret allows secret values.

func asConfigMap(allowSecretValues bool) esOpt {
	return func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Kind = v1alpha1.TargetConfigMap
		es.Spec.Target.AllowSecretValues = allowSecretValues
	}
}

func getConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	return &cm, err
}

// waitConfigMap waits until the ConfigMap holds exactly data and binary.
func waitConfigMap(t *testing.T, ns, name string, data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	eventually(t, wait, func() (bool, string) {
		var err error
		if cm, err = getConfigMap(ns, name); err != nil {
			return false, err.Error()
		}
		if !maps.Equal(cm.Data, data) || len(cm.BinaryData) != len(binary) {
			return false, fmt.Sprintf("ConfigMap data %v, binaryData keys %v", cm.Data, keysOf(cm.BinaryData))
		}
		for k, v := range binary {
			if string(cm.BinaryData[k]) != string(v) {
				return false, fmt.Sprintf("binaryData key %s differs", k)
			}
		}
		return true, ""
	})
	return cm
}

// checkOwned fails unless cm carries the marks of a target es owns.
func checkOwned(t *testing.T, cm *corev1.ConfigMap, es *v1alpha1.ExternalSecret) {
	t.Helper()
	ref := metav1.GetControllerOf(cm)
	if ref == nil || ref.UID != es.UID || ref.Kind != "ExternalSecret" {
		t.Errorf("ConfigMap %s: controller %v, want ExternalSecret %s", cm.Name, ref, es.Name)
	}
	if cm.Labels[conditions.ManagedByLabel] != conditions.ManagedByValue || cm.Annotations[conditions.OwnerAnnotation] != es.Name {
		t.Errorf("ConfigMap %s: labels %v, annotations %v lack Watchword's marks", cm.Name, cm.Labels, cm.Annotations)
	}
}

// TestConfigMapTargetFromParameterStore: String and StringList parameters
// of AWS Parameter Store are written into a ConfigMap, and follow a
// change; a SecureString parameter is refused with SecretValuesNotAllowed,
// naming it, while the ConfigMap keeps what it holds, until the
// ExternalSecret allows secret values.
func TestConfigMapTargetFromParameterStore(t *testing.T) {
	parallel(t)
	fake := newAWSFake(t)
	ns := newNamespace(t, nil)
	awsKeyStore(t, fake, ns, "ps", "awsps", "config")
	p := "/" + ns + "/"
	fake.PutParameter(p+"level", "debug", "String")
	fake.PutParameter(p+"hosts", "a,b", "StringList")
	fake.PutParameter(p+"token", sentinel, "SecureString")

	newES(t, ns, "settings", "ps", withRefresh(2*time.Second), asConfigMap(false),
		withData("level", p+"level", ""), withData("hosts", p+"hosts", ""))
	cm := waitConfigMap(t, ns, "settings", map[string]string{"level": "debug", "hosts": "a,b"}, nil)
	checkOwned(t, cm, waitReady(t, ns, "settings"))
	if _, err := getSecret(ns, "settings"); err == nil {
		t.Error("a Secret was written beside the ConfigMap target")
	}
	fake.PutParameter(p+"level", "info", "String")
	waitConfigMap(t, ns, "settings", map[string]string{"level": "info", "hosts": "a,b"}, nil)

	// A SecureString in the same target: refused by name, nothing lost.
	updateES(t, ns, "settings", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "token", RemoteRef: v1alpha1.RemoteReference{Key: p + "token"}})
	})
	waitCondition(t, ns, "settings", "SecretValuesNotAllowed", `remote key "`+p+`token"`, "allowSecretValues")
	consistently(t, 3*time.Second, func() (bool, string) {
		cm, err := getConfigMap(ns, "settings")
		if err != nil {
			return false, err.Error()
		}
		return maps.Equal(cm.Data, map[string]string{"level": "info", "hosts": "a,b"}), fmt.Sprintf("the ConfigMap changed while refused: keys %v", cm.Data)
	})
	es := getES(t, ns, "settings")
	if c := readyCond(es); c != nil && strings.Contains(c.Message, sentinel) {
		t.Errorf("the condition shows the secret value: %s", c.Message)
	}

	// The opt-in lets it through.
	updateES(t, ns, "settings", func(es *v1alpha1.ExternalSecret) { es.Spec.Target.AllowSecretValues = true })
	waitConfigMap(t, ns, "settings", map[string]string{"level": "info", "hosts": "a,b", "token": sentinel}, nil)
	waitReady(t, ns, "settings")
}

// TestConfigMapTargetOwnedLikeASecret: with a store that marks nothing
// (the fake, where every value counts as secret), a ConfigMap target is
// refused without the opt-in and written with it: UTF-8 values in data,
// others in binaryData, through a template too; a change in the store
// follows, an edit by someone else is repaired, and deletionPolicy Delete
// lets garbage collection remove it.
func TestConfigMapTargetOwnedLikeASecret(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	// "AP8=" is base64 of the bytes 0x00 0xff, which are not UTF-8.
	fakeStore(t, ns, "s", fakeEntry{key: "level", value: "debug"}, fakeEntry{key: "blob", value: "AP8="})
	binary := func(es *v1alpha1.ExternalSecret) {
		es.Spec.Data = append(es.Spec.Data, v1alpha1.ExternalSecretData{SecretKey: "blob",
			RemoteRef: v1alpha1.RemoteReference{Key: "blob", DecodingStrategy: v1alpha1.DecodeBase64}})
	}

	newES(t, ns, "refused", "s", asConfigMap(false), withData("level", "level", ""))
	waitCondition(t, ns, "refused", "SecretValuesNotAllowed", `remote key "level"`)
	if _, err := getConfigMap(ns, "refused"); err == nil {
		t.Error("a refused ConfigMap target was written")
	}

	newES(t, ns, "app", "s", asConfigMap(true), withData("level", "level", ""), binary,
		withTemplate(&v1alpha1.ExternalSecretTemplate{MergePolicy: v1alpha1.TemplateMergeMerge,
			Data:     map[string]string{"settings.yaml": "logLevel: {{ .level }}"},
			Metadata: v1alpha1.ExternalSecretTemplateMetadata{Labels: map[string]string{"team": "a"}}}))
	want := map[string]string{"level": "debug", "settings.yaml": "logLevel: debug"}
	wantBinary := map[string][]byte{"blob": {0x00, 0xff}}
	cm := waitConfigMap(t, ns, "app", want, wantBinary)
	es := waitReady(t, ns, "app")
	checkOwned(t, cm, es)
	if cm.Labels["team"] != "a" {
		t.Errorf("the template's label is missing: %v", cm.Labels)
	}

	// A change in the store reaches the ConfigMap.
	updateStore(t, ns, "s", func(s *v1alpha1.SecretStore) { s.Spec.Fake.Data[0].Value = "warn" })
	want = map[string]string{"level": "warn", "settings.yaml": "logLevel: warn"}
	waitConfigMap(t, ns, "app", want, wantBinary)

	// An edit by someone else is repaired.
	eventually(t, wait, func() (bool, string) {
		cm, err := getConfigMap(ns, "app")
		if err != nil {
			return false, err.Error()
		}
		cm.Data["level"] = "tampered"
		cm.Data["extra"] = "x"
		if err := k8s.Update(context.Background(), cm); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	waitConfigMap(t, ns, "app", want, wantBinary)
	waitEvent(t, ns, "app", "DriftRepaired", `ConfigMap "app"`)

	// deletionPolicy Delete (the default): garbage collected with the
	// ExternalSecret.
	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})
}

// TestConfigMapTargetAdoptionAndRetain: a ConfigMap that someone else
// made is not written without adopt: true, and is left as it was; with
// adopt it is taken over; with deletionPolicy Retain it outlives the
// ExternalSecret, without Watchword's owner reference and annotation.
func TestConfigMapTargetAdoptionAndRetain(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	fakeStore(t, ns, "s", fakeEntry{key: "level", value: "debug"})
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"level": "mine"}}
	must(t, k8s.Create(context.Background(), theirs))

	newES(t, ns, "es", "s", withTarget("theirs", ""), asConfigMap(true), withData("level", "level", ""))
	waitCondition(t, ns, "es", "TargetConflict", `ConfigMap "theirs"`, "adopt")
	consistently(t, 3*time.Second, func() (bool, string) {
		cm, err := getConfigMap(ns, "theirs")
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["level"] == "mine" && metav1.GetControllerOf(cm) == nil, fmt.Sprintf("the foreign ConfigMap was written: %v", cm.Data)
	})

	updateES(t, ns, "es", func(es *v1alpha1.ExternalSecret) {
		es.Spec.Target.Adopt = true
		es.Spec.Target.DeletionPolicy = v1alpha1.DeletionPolicyRetain
	})
	cm := waitConfigMap(t, ns, "theirs", map[string]string{"level": "debug"}, nil)
	es := waitReady(t, ns, "es")
	checkOwned(t, cm, es)

	must(t, k8s.Delete(context.Background(), es))
	waitGone(t, es)
	cm, err := getConfigMap(ns, "theirs")
	must(t, err)
	if ref := metav1.GetControllerOf(cm); ref != nil || cm.Annotations[conditions.OwnerAnnotation] != "" {
		t.Errorf("a retained ConfigMap keeps the owner: reference %v, annotations %v", ref, cm.Annotations)
	}
	if cm.Data["level"] != "debug" {
		t.Errorf("a retained ConfigMap lost its data: %v", cm.Data)
	}
}
