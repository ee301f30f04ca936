package integration

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// loadSeed reads a seed example and gives it a name and a namespace (the
// seed's metadata is a placeholder). Its fields are used unchanged; only
// the tabs that indent three comment lines of the ExternalSecret example
// become spaces, since YAML forbids tabs there and no YAML parser (kubectl's
// included) would read the file otherwise.
func loadSeed(t *testing.T, file, ns string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	must(t, err)
	raw = regexp.MustCompile(`(?m)^\t+#`).ReplaceAll(raw, []byte("  #"))
	u := &unstructured.Unstructured{}
	must(t, yaml.Unmarshal(raw, &u.Object))
	u.Object["metadata"] = map[string]any{"name": "seed-example", "namespace": ns}
	return u
}

func TestSeedExamplesAreAccepted(t *testing.T) {
	ns := newNamespace(t, nil)
	for _, f := range []string{"testdata/seed-externalsecret.yaml", "testdata/seed-secretstore.yaml"} {
		t.Run(f, func(t *testing.T) {
			u := loadSeed(t, f, ns)
			if err := k8s.Create(context.Background(), u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("server-side dry run rejected the seed example: %v", err)
			}
		})
	}
}

func TestValidationRejectsBadInputWithReadableMessages(t *testing.T) {
	ns := newNamespace(t, nil)
	cases := []struct {
		name   string
		file   string
		change func(u *unstructured.Unstructured)
		want   string
	}{
		{name: "two provider blocks", file: "testdata/seed-secretstore.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, map[string]any{"data": []any{}}, "spec", "fake"))
			}, want: "set exactly one provider block"},
		{name: "no provider block", file: "testdata/seed-secretstore.yaml",
			change: func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "awssm") },
			want:   "set exactly one provider block"},
		{name: "unknown creation policy", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "Orphan", "spec", "target", "creationPolicy"))
			}, want: `Unsupported value: "Orphan"`},
		{name: "invalid refresh interval", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "every hour", "spec", "refreshInterval"))
			}, want: "refreshInterval must be a Go duration"},
		{name: "service account token type", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "kubernetes.io/service-account-token", "spec", "target", "template", "type"))
			}, want: "service-account-token is not allowed"},
		{name: "no data at all", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "data")
				unstructured.RemoveNestedField(u.Object, "spec", "dataFrom")
			}, want: "set at least one entry in data or dataFrom"},
		{name: "bad store kind", file: "testdata/seed-externalsecret.yaml",
			change: func(u *unstructured.Unstructured) {
				must(t, unstructured.SetNestedField(u.Object, "VaultStore", "spec", "secretStoreRef", "kind"))
			}, want: `Unsupported value: "VaultStore"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSeed(t, tc.file, ns)
			tc.change(u)
			err := k8s.Create(context.Background(), u, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTargetNameIsImmutable(t *testing.T) {
	ns := newNamespace(t, nil)
	u := loadSeed(t, "testdata/seed-externalsecret.yaml", ns)
	must(t, k8s.Create(context.Background(), u))
	eventually(t, wait, func() (bool, string) {
		must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(u), u))
		must(t, unstructured.SetNestedField(u.Object, "other-name", "spec", "target", "name"))
		err := k8s.Update(context.Background(), u)
		return err != nil && strings.Contains(err.Error(), "target.name is immutable"), fmt.Sprintf("got %v", err)
	})
}
