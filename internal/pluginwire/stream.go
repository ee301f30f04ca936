package pluginwire

// MaxBatchRefs bounds the refs of one BatchGet: the client sends no more,
// and the SDK refuses a larger batch with INVALID_ARGUMENT.
const MaxBatchRefs = 100

// WatchReadyHeader is the header a plugin sends on a Watch stream once its
// watch is in place: from then on it announces every change. The client
// waits for it before it tells its caller that anything may have changed
// since the last watch.
const WatchReadyHeader = "watchword-watch-ready"
