package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/watchword-dev/watchword/internal/engine"
	pluginprovider "github.com/watchword-dev/watchword/internal/provider/plugin"
)

// storeFake and storeMemoryPlugin are the stores the bench can use
// (-store): the fake provider with a simulated latency, or the example
// memory plugin (examples/memoryplugin) over a unix socket, which can
// batch reads, so that the calls per refresh cycle show the batching.
const (
	storeFake         = "fake"
	storeMemoryPlugin = "memory-plugin"
)

// pluginPartition is the memory plugin's partition of the bench's store.
const pluginPartition = "bench"

// startMemoryPlugin builds the example memory plugin, runs it on a socket
// in dir, and writes the bench's keys to it; stop ends it.
func (b *bench) startMemoryPlugin(ctx context.Context, dir string) (endpoint string, stop func(), err error) {
	bin := filepath.Join(dir, "memoryplugin")
	if out, berr := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/watchword-dev/watchword/examples/memoryplugin").CombinedOutput(); berr != nil {
		return "", nil, fmt.Errorf("building the memory plugin: %v: %s", berr, out)
	}
	sock := filepath.Join(dir, "memory.sock")
	endpoint = "unix://" + sock
	cmd := exec.Command(bin, "-endpoint", endpoint)
	cmd.Stderr = os.Stderr
	if serr := cmd.Start(); serr != nil {
		return "", nil, serr
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	for i := 0; ; i++ {
		if _, serr := os.Stat(sock); serr == nil {
			break
		}
		if i == 300 {
			stop()
			return "", nil, fmt.Errorf("the memory plugin did not listen on %s within 30s", endpoint)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ops, err := pluginprovider.Dial(ctx, endpoint, map[string]string{"partition": pluginPartition})
	if err != nil {
		stop()
		return "", nil, err
	}
	defer func() { _ = ops.Closer.Close() }()
	err = b.parallel(ctx, b.c.Keys, func(i int) error {
		_, perr := ops.Writer.PutSecret(ctx, fmt.Sprintf("key-%d", i),
			engine.Publication{Fields: map[string][]byte{"password": fmt.Appendf(nil, "value-%d", i)}}, engine.Owner{ID: "bench/seed"})
		return perr
	})
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("writing the keys to the memory plugin: %w", err)
	}
	return endpoint, stop, nil
}
