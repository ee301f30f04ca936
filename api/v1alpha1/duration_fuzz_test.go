package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// durationRule finds the patterns of the duration rules in the generated
// CRDs: self.matches('...') in a rule whose message speaks of a duration.
var durationRule = regexp.MustCompile(`rule: self\.matches\('(\^[^']*\$)'\)`)

func durationPatterns(t testing.TB) []*regexp.Regexp {
	t.Helper()
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	seen := map[string]bool{}
	var out []*regexp.Regexp
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range durationRule.FindAllSubmatch(raw, -1) {
			p := string(m[1])
			if seen[p] || !regexp.MustCompile(`ns\|us`).MatchString(p) {
				continue
			}
			seen[p] = true
			// CEL's matches is RE2, as Go's regexp is.
			out = append(out, regexp.MustCompile(p))
		}
	}
	if len(out) == 0 {
		t.Fatal("no duration rule found in the CRDs")
	}
	return out
}

// FuzzParseDuration checks the duration fields of the API (refreshInterval,
// a fake store's latency and retryAfter): every string their CEL rule lets
// the API server store must decode as a duration, or the controller could
// not decode the object, nor list its kind.
func FuzzParseDuration(f *testing.F) {
	patterns := durationPatterns(f)
	for _, s := range []string{"0", "1h", "1h30m", "1.5s", "300ms", "10µs", "9999999999h", "99999h99999h99999h99999h", "99999.999999999h99999h99999h99999h", "2562047h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range patterns {
			if !p.MatchString(s) {
				continue
			}
			var d metav1.Duration
			if err := json.Unmarshal([]byte(strconv.Quote(s)), &d); err != nil {
				t.Fatalf("%q passes the CRD rule %s but does not decode: %v", s, p, err)
			}
		}
	})
}
