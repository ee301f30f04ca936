// Package builtin lists the providers built into Watchword, once, for every
// program that runs the operator: the operator's command, the local
// development command and the test suites, which wrap or configure some of
// them but start from this list.
package builtin

import (
	"github.com/watchword-dev/watchword/internal/provider"
	"github.com/watchword-dev/watchword/internal/provider/alibaba"
	"github.com/watchword-dev/watchword/internal/provider/awsps"
	"github.com/watchword-dev/watchword/internal/provider/awssm"
	"github.com/watchword-dev/watchword/internal/provider/azurekv"
	"github.com/watchword-dev/watchword/internal/provider/barbican"
	"github.com/watchword-dev/watchword/internal/provider/conjur"
	"github.com/watchword-dev/watchword/internal/provider/fake"
	"github.com/watchword-dev/watchword/internal/provider/gcpsm"
	"github.com/watchword-dev/watchword/internal/provider/gitlab"
	"github.com/watchword-dev/watchword/internal/provider/infisical"
	"github.com/watchword-dev/watchword/internal/provider/kubernetes"
	"github.com/watchword-dev/watchword/internal/provider/onepassword"
	"github.com/watchword-dev/watchword/internal/provider/plugin"
	"github.com/watchword-dev/watchword/internal/provider/vault"
	"github.com/watchword-dev/watchword/internal/provider/webhook"
)

// Registry returns the built-in providers, keyed by the name of their block
// in a store's spec.provider. A new provider adds its line here.
func Registry() provider.Registry {
	return provider.Registry{
		"alibaba":    alibaba.Factory{},
		"awsps":      awsps.Factory{},
		"awssm":      awssm.Factory{},
		"azurekv":    azurekv.Factory{},
		"barbican":   barbican.Factory{},
		"fake":       fake.Factory{},
		"gcpsm":      gcpsm.Factory{},
		"kubernetes": kubernetes.Factory{},
		"plugin":     plugin.Factory{},
		"vault":      vault.Factory{},
		"webhook":    webhook.Factory{},
		"gitlab":     gitlab.Factory{},

		"onepassword": onepassword.Factory{},
		"conjur":      conjur.Factory{},
		"infisical":   infisical.Factory{},
	}
}
