package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// crdSchema is what the API server checks a custom resource with: the
// structural schema of the CRD's served version (for defaults and
// unknown fields), its OpenAPI validator and its CEL rules.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// loadCRDs reads the generated CRDs (config/crd/bases) by kind. The same
// schema the API server serves is used here through the API server's own
// validation packages, so the unit tests check what an apply would; the
// integration test TestConvertedCorpusIsAccepted applies the corpus to a
// real API server.
func loadCRDs(t *testing.T) map[string]*crdSchema {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	out := map[string]*crdSchema{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != v1alpha1.GroupVersion.Version || v.Schema == nil {
				continue
			}
			var props apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			s, err := structuralschema.NewStructural(&props)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			val, _, err := validation.NewSchemaValidator(&props)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[crd.Spec.Names.Kind] = &crdSchema{structural: s, validator: val, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
		}
	}
	return out
}

// check returns what the API server would refuse in obj, a converted
// object: fields the schema does not know, schema violations and CEL
// rules that fail, after the schema's defaults are applied.
func (s *crdSchema) check(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, p := range pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, field.Invalid(field.NewPath(p), nil, "unknown field"))
	}
	defaulting.Default(obj, s.structural)
	errs = append(errs, validation.ValidateCustomResource(nil, obj, s.validator)...)
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// TestConvertedCorpusMatchesCRDs checks every Watchword object that the
// corpus converts to against the schema and the CEL rules of its CRD.
func TestConvertedCorpusMatchesCRDs(t *testing.T) {
	crds := loadCRDs(t)
	checked := map[string]int{}
	for _, file := range corpusFiles(t) {
		res := convertFile(t, file)
		for i, doc := range strings.Split(string(res.Output), "---\n") {
			// Decoded as the API server decodes a body: whole numbers
			// as int64, as the CEL rules on integers expect.
			var obj map[string]any
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err == nil {
				err = utiljson.Unmarshal(j, &obj)
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, i+1, err)
			}
			if obj["apiVersion"] != v1alpha1.GroupVersion.String() {
				continue
			}
			kind, _ := obj["kind"].(string)
			crd := crds[kind]
			if crd == nil {
				t.Fatalf("no CRD for %s", kind)
			}
			meta, _ := obj["metadata"].(map[string]any)
			if errs := crd.check(obj); len(errs) > 0 {
				t.Errorf("%s: %s %v would be refused: %v", filepath.Base(file), kind, meta["name"], errs.ToAggregate())
			}
			checked[kind]++
		}
	}
	for _, kind := range []string{"SecretStore", "ClusterSecretStore", "ExternalSecret", "PushSecret", "ClusterExternalSecret", "ClusterPushSecret"} {
		if checked[kind] == 0 {
			t.Errorf("no converted %s was checked", kind)
		}
	}
	t.Logf("converted objects checked against their CRDs: %v", checked)
}

// TestCRDCheckRefuses: the check refuses what the API server refuses, so
// that its passing means something.
func TestCRDCheckRefuses(t *testing.T) {
	crds := loadCRDs(t)
	for name, doc := range map[string]string{
		"unknown field":       "spec: {gcpsm: {projectID: p, auth: {secretRef: {secretAccessKeySecretRef: {name: s, key: k}}}, region: x}}",
		"two auth methods":    "spec: {azurekv: {vaultURL: 'https://v.vault.azure.net', auth: {managedIdentity: {}, clientSecret: {clientID: c, clientSecretRef: {name: s, key: k}}}}}",
		"vault URL not https": "spec: {azurekv: {vaultURL: 'http://v.vault.azure.net', auth: {managedIdentity: {}}}}",
		"project pattern":     "spec: {gcpsm: {projectID: My_Project, auth: {secretRef: {secretAccessKeySecretRef: {name: s, key: k}}}}}",
		"audience":            "spec: {gcpsm: {projectID: p, auth: {workloadIdentityFederation: {audience: pool, serviceAccountRef: {name: a}}}}}",
		"no provider":         "spec: {}",
		"role ARN":            "spec: {alibaba: {regionID: cn-hangzhou, auth: {rrsa: {roleARN: arn:aws:iam::1:role/r, oidcProviderARN: 'acs:ram::1:oidc-provider/p', serviceAccountRef: {name: a}}}}}",
	} {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: "+v1alpha1.GroupVersion.String()+"\nkind: SecretStore\nmetadata: {name: s, namespace: n}\n"+doc), &obj); err != nil {
			t.Fatal(err)
		}
		if errs := crds["SecretStore"].check(obj); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
