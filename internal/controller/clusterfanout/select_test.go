package clusterfanout

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

func ns(name string, labels map[string]string) corev1.Namespace {
	return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestSelectedNamespaces(t *testing.T) {
	now := metav1.Now()
	terminating := ns("team-gone", map[string]string{"tier": "app"})
	terminating.DeletionTimestamp = &now
	all := []corev1.Namespace{
		ns("team-a", map[string]string{"tier": "app"}),
		ns("team-b", nil),
		ns("my-team-c", nil),
		ns("payments", map[string]string{"tier": "db", "pci": "yes"}),
		ns("kube-system", nil),
		terminating,
	}
	for _, tc := range []struct {
		name    string
		targets v1alpha1.NamespaceTargets
		want    []string
	}{
		{"by label", v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "app"}}}},
			[]string{"team-a"}},
		{"by expression", v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "pci", Operator: metav1.LabelSelectorOpExists}}}}}, []string{"payments"}},
		{"selectors are OR-ed", v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"tier": "app"}}, {MatchLabels: map[string]string{"tier": "db"}}}}, []string{"payments", "team-a"}},
		{"by name", v1alpha1.NamespaceTargets{Namespaces: []string{"team-b", "absent"}}, []string{"team-b"}},
		{"regex is anchored", v1alpha1.NamespaceTargets{NamespaceRegexes: []string{"team-.*"}}, []string{"team-a", "team-b"}},
		{"regex alternatives stay anchored", v1alpha1.NamespaceTargets{NamespaceRegexes: []string{"team-a|payments"}}, []string{"payments", "team-a"}},
		{"all three OR-ed", v1alpha1.NamespaceTargets{Namespaces: []string{"kube-system"}, NamespaceRegexes: []string{".*-c"},
			NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "db"}}}}, []string{"kube-system", "my-team-c", "payments"}},
		{"empty selector selects every live namespace", v1alpha1.NamespaceTargets{NamespaceSelectors: []metav1.LabelSelector{{}}},
			[]string{"kube-system", "my-team-c", "payments", "team-a", "team-b"}},
		{"a namespace being deleted is never selected", v1alpha1.NamespaceTargets{Namespaces: []string{"team-gone"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compile(tc.targets)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.selected(all); !slices.Equal(got, tc.want) {
				t.Errorf("selected %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInvalidSelectorsAreTerminal(t *testing.T) {
	for name, targets := range map[string]v1alpha1.NamespaceTargets{
		"regex":    {NamespaceRegexes: []string{"team-("}},
		"operator": {NamespaceSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compile(targets)
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Reason != failure.InvalidNamespaceSelector || !fe.Terminal {
				t.Fatalf("compile = %v, want a terminal %s", err, failure.InvalidNamespaceSelector)
			}
		})
	}
}

func TestStampHashFollowsSpecAndMetadata(t *testing.T) {
	base := Spec{Payload: v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "a"}}}
	h1, _ := stampHash(base)
	same, _ := stampHash(base)
	changed := base
	changed.Payload = v1alpha1.ExternalSecretSpec{SecretStoreRef: v1alpha1.StoreRef{Name: "b"}}
	h2, _ := stampHash(changed)
	labelled := base
	labelled.Metadata.Labels = map[string]string{"x": "y"}
	h3, _ := stampHash(labelled)
	if h1 != same || h1 == h2 || h1 == h3 {
		t.Errorf("hashes %s %s %s %s: want equal for the same spec and different otherwise", h1, same, h2, h3)
	}
}
