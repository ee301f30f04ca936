package restart

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

func lister(name, target string) *v1alpha1.ExternalSecret {
	es := &v1alpha1.ExternalSecret{ObjectMeta: metav1.ObjectMeta{Name: name}}
	es.Spec.Target.Name = target
	return es
}

func TestAddListed(t *testing.T) {
	cases := []struct {
		name    string
		own     map[string]Usage
		listers []*v1alpha1.ExternalSecret
		want    string
	}{
		{"a Secret the template reads by key", nil, []*v1alpha1.ExternalSecret{lister("env-key", "")}, "env-key:a+b"},
		{"a Secret the template does not reference is used whole", nil, []*v1alpha1.ExternalSecret{lister("es", "elsewhere")}, "elsewhere:*"},
		{"the target name, not the ExternalSecret's", nil, []*v1alpha1.ExternalSecret{lister("es", "vol-items")}, "vol-items:tls.crt"},
		{"an own opt-in that uses it whole stays whole", map[string]Usage{"env-key": {Whole: true}},
			[]*v1alpha1.ExternalSecret{lister("env-key", "")}, "env-key:*"},
		{"keys add up", map[string]Usage{"env-key": {Keys: map[string]bool{"c": true}}},
			[]*v1alpha1.ExternalSecret{lister("env-key", "")}, "env-key:a+b+c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			used := map[string]Usage{}
			for k, v := range c.own {
				used[k] = v
			}
			addListed(used, c.listers, podSpec())
			if got := describe(used); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
