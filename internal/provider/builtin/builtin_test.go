package builtin

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/watchword-dev/watchword/api/v1alpha1"
)

// Every provider block of the API has exactly one built-in provider under
// its JSON name, and every built-in provider has a block: a block without
// a provider would be accepted by the API server and then fail every store
// that uses it, and a provider without a block could never be chosen.
func TestEveryProviderBlockHasOneProvider(t *testing.T) {
	var blocks []string
	typ := reflect.TypeFor[v1alpha1.SecretStoreProvider]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" {
			blocks = append(blocks, name)
		}
	}
	reg := Registry()
	for _, b := range blocks {
		if _, ok := reg[b]; !ok {
			t.Errorf("the API's provider block %q has no built-in provider", b)
		}
	}
	for name := range reg {
		if !slices.Contains(blocks, name) {
			t.Errorf("the built-in provider %q has no block in the API's SecretStoreProvider", name)
		}
	}
	if len(blocks) != len(reg) {
		t.Errorf("%d provider blocks in the API, %d built-in providers", len(blocks), len(reg))
	}
}
