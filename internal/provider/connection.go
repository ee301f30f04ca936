package provider

// ConnectionWatcher is implemented by the Checker of a client that keeps a
// connection to its store (the plugin provider's): ConnectionChanges
// receives a value when the connection is lost or comes back, so that the
// store's condition follows at once instead of at the next periodic check.
// The channel is closed when the client is closed.
type ConnectionWatcher interface {
	ConnectionChanges() <-chan struct{}
}
