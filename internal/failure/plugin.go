package failure

// Reasons of stores served by plugins (the plugin provider). They follow
// the same error model as the reasons in failure.go; an error of either
// still wraps its class (ErrUnavailable, ErrNotSupported), so callers that
// ask for the class keep working.
const (
	// PluginUnavailable: the plugin cannot be reached: its socket does
	// not exist, nothing listens on it, its process ended, or the TLS
	// handshake with it failed. Retried with backoff; the connection is
	// re-established as soon as the plugin listens again.
	PluginUnavailable Reason = "PluginUnavailable"
	// PluginProtocolUnsupported: the plugin and Watchword share no
	// version of the plugin protocol. Retried with backoff: replacing the
	// plugin with one that speaks it needs no edit of the store.
	PluginProtocolUnsupported Reason = "PluginProtocolUnsupported"
)
