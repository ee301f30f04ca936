package clusterfanout

import (
	"fmt"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/watchword-dev/watchword/api/v1alpha1"
	"github.com/watchword-dev/watchword/internal/failure"
)

// selector is a compiled NamespaceTargets: a namespace is selected when
// it matches any label selector, name or regular expression.
type selector struct {
	labels  []labels.Selector
	names   []string
	regexes []*regexp.Regexp
}

// compile checks and compiles t. The API server refuses an invalid
// regular expression already (CEL); the same check here covers an object
// written before that rule, and a label selector that CEL cannot check.
func compile(t v1alpha1.NamespaceTargets) (selector, error) {
	var s selector
	for i := range t.NamespaceSelectors {
		ls, err := metav1.LabelSelectorAsSelector(&t.NamespaceSelectors[i])
		if err != nil {
			return selector{}, failure.Terminalf(failure.InvalidNamespaceSelector,
				"spec.namespaceSelectors[%d] is not a valid label selector (check its keys, operators and values); fix it (no stamped object was removed)", i)
		}
		s.labels = append(s.labels, ls)
	}
	s.names = slices.Clone(t.Namespaces)
	for i, expr := range t.NamespaceRegexes {
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil {
			return selector{}, failure.Terminalf(failure.InvalidNamespaceSelector,
				"spec.namespaceRegexes[%d] is not a valid RE2 regular expression; fix it (no stamped object was removed)", i)
		}
		s.regexes = append(s.regexes, re)
	}
	return s, nil
}

// matches tells whether ns is selected. A namespace being deleted is not.
func (s selector) matches(ns *corev1.Namespace) bool {
	if !ns.DeletionTimestamp.IsZero() || ns.Status.Phase == corev1.NamespaceTerminating {
		return false
	}
	if slices.Contains(s.names, ns.Name) {
		return true
	}
	set := labels.Set(ns.Labels)
	for _, ls := range s.labels {
		if ls.Matches(set) {
			return true
		}
	}
	for _, re := range s.regexes {
		if re.MatchString(ns.Name) {
			return true
		}
	}
	return false
}

// selected are the names of the namespaces of list that s selects,
// sorted.
func (s selector) selected(list []corev1.Namespace) []string {
	var out []string
	for i := range list {
		if s.matches(&list[i]) {
			out = append(out, list[i].Name)
		}
	}
	slices.Sort(out)
	return out
}

// String is for logs.
func (s selector) String() string {
	return fmt.Sprintf("%d selectors, %d names, %d regexes", len(s.labels), len(s.names), len(s.regexes))
}
