package vault

import (
	"testing"

	"github.com/watchword-dev/watchword/internal/provider/providertest"
)

func TestRefsNameEveryCredentialField(t *testing.T) {
	providertest.RefsAreComplete(t, Factory{}, "vault")
}
